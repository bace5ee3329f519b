"""The garbage collector tuned for a consumer process (applied by ``lagless consume``).

A consumer with a fast handler allocates a few objects per record (the record, its place in
the queues) at hundreds of thousands of records a second, and many live for a while (held,
in flight). CPython's cyclic collector then runs often, and its full collections walk every
tracked object of the process: measured here, an engine run with a `noop` handler went from
~100k to 180k-250k records/s when the collector had less to walk or ran less. Libraries do not
change process-wide settings; the CLI, which owns its process, does, and so can an application
(:func:`tune_gc`).
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 20_000  # allocations between young collections (CPython's default: 700)


def tune_gc() -> None:
    """Move every object alive now (imports, configuration) out of the collector's sight
    (``gc.freeze``) and collect young objects less often. Reference counting still frees
    everything that is not in a cycle at once."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
