"""The user's transformation of the valid rows: a Python function ``DataFrame -> DataFrame``
(``module:function``, or the function itself) or a SQL statement over the view ``input``.

It runs on the driver once per micro-batch, over that batch's valid rows (rejected rows never
reach it). It is tried once on an empty frame of the input's columns before the query starts,
so a function that does not fit them, or a SQL statement that does not parse, fails the run
with one line before any record is read. A transformation that raises while a batch runs
fails the query with one line naming it; nothing of that batch is visible to readers (its
Parquet output is written only after it, in one job), and the batch runs again at the next
start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame

from lagless.errors import ConfigError, LaglessError
from lagless.spark.pipeline.schemas import load_target

VIEW = "input"
Function = Callable[[DataFrame], DataFrame]


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0].strip() if text else ""
    return f"{type(exc).__name__}: {first}"[:400] if first else type(exc).__name__


@dataclass(frozen=True)
class Transformation:
    name: str  # "module:function", the function's qualified name, or "sql"
    function: Function | None = None
    sql: str | None = None

    def __call__(self, rows: DataFrame) -> DataFrame:
        try:
            if self.sql is not None:
                rows.createOrReplaceTempView(VIEW)
                out = rows.sparkSession.sql(self.sql)
            else:
                assert self.function is not None
                out = self.function(rows)
        except Exception as exc:
            raise LaglessError(f"transformation {self.name} failed: {one_line(exc)}") from None
        if not isinstance(out, DataFrame):
            raise LaglessError(
                f"transformation {self.name} returned {type(out).__name__}, not a DataFrame"
            )
        return out

    def check(self, empty: DataFrame) -> list[str]:
        """Run on an empty frame of the input's columns: the output's columns (ConfigError with
        one line if it fails)."""
        try:
            return self(empty).columns
        except LaglessError as exc:
            raise ConfigError(str(exc)) from None


def transformation(function: str | Function | None, sql: str | None) -> Transformation | None:
    if function is not None and sql is not None:
        raise ConfigError("give --transform or --sql, not both")
    if sql is not None:
        if not sql.strip():
            raise ConfigError("--sql is empty")
        return Transformation("sql", sql=sql)
    if function is None:
        return None
    if isinstance(function, str):
        target = load_target(function, "--transform")
        if not callable(target):
            raise ConfigError(f"--transform {function}: not a function")
        return Transformation(function, function=target)
    name = f"{function.__module__}:{getattr(function, '__qualname__', repr(function))}"
    return Transformation(name, function=function)
