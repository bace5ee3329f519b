"""Validation of each record by the JSON Schema itself (given as a file, or a pydantic model's),
not only by the Spark schema derived from it: ``minimum``, ``pattern``, ``enum``,
``additionalProperties``, string formats the Spark types do not carry, ...

A Python UDF (Arrow-batched) over the value's text, run on the executors; the schema travels
with the UDF, so the executors need ``jsonschema`` (the ``schemaregistry`` extra) but not the
user's model. Rows it rejects get class ``schema_violation`` and the first error, with where
in the record it is (``price: -1 is less than the minimum of 0``).
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StringType, StructField, StructType

SCHEMA_VIOLATION = "schema_violation"
REASON = StructType([StructField("cls", StringType()), StructField("msg", StringType())])


class RecordValidator:
    """Picklable: the validator is built on first use in each executor process."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validator: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"schema": self.schema, "_validator": None}

    def reason(self, text: str | None) -> tuple[str, str] | None:
        if text is None:
            return None  # the parse has already said why
        if self._validator is None:
            from jsonschema import (  # type: ignore[import-untyped]
                Draft202012Validator,
                FormatChecker,
            )

            self._validator = Draft202012Validator(self.schema, format_checker=FormatChecker())
        try:
            doc = json.loads(text)
        except ValueError:
            return None  # broken JSON: the parse says so
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

        error = best_match(self._validator.iter_errors(doc))
        if error is None:
            return None
        where = ".".join(str(p) for p in error.absolute_path) or "record"
        return SCHEMA_VIOLATION, f"{where}: {error.message}"[:500]


def schema_reason(value_text: Column, schema: dict[str, Any]) -> Column:
    """A ``(cls, msg)`` struct: why the JSON Schema rejects the value; null when it accepts."""
    validator = RecordValidator(schema)
    check = F.udf(validator.reason, REASON, useArrow=True)
    result: Column = check(value_text)
    return result
