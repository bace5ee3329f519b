"""The partition planner: measure one partition, then size the topic and its clients.

``sizing`` is the pure arithmetic (partitions, settings with reasons, costs);
``measure`` runs the produce and consume measurements on the target cluster. ``lagless plan``
puts them together.
"""

from lagless.plan.sizing import Plan, PlanInput, make_plan, partitions_needed

__all__ = ["Plan", "PlanInput", "make_plan", "partitions_needed"]
