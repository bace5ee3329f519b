"""What lagless does in a Spark Python worker once its first lagless task has ended.

PySpark's daemon runs ``gc.collect()`` in a reused worker after every task. A worker holds its
imports (pyspark, pyarrow, pandas, confluent-kafka: ~80k objects), so each collection walks
them all, ~50 ms of CPU per task on the same cores the tasks need, and finds nothing: modules
live as long as the process. :func:`freeze_imports` moves what exists when a worker's first
lagless task ends (its imports done, the lazy ones included) into the collector's permanent
generation (``gc.freeze``), once per process; later collections walk only what tasks made
since. Objects frozen then are still freed by reference counting; only a reference cycle among
them would stay, and those objects are made once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from functools import cache
from typing import TypeVar

T = TypeVar("T")


@cache
def freeze_imports() -> None:
    """Once per process: ``gc.freeze()`` (see the module's text)."""
    gc.collect()
    gc.freeze()


def freezing_after(items: Iterator[T]) -> Iterator[T]:
    """``items``, then :func:`freeze_imports` once they are all taken."""
    yield from items
    freeze_imports()
