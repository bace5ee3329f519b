"""Uses of the general pipeline (:mod:`lagless.spark.pipeline`): the demo's events."""
