"""Record ids and the headers that carry them: the neutral names shared by the load generator
(``lagless.produce``), the engine's ledger of processed ids and the Spark pipeline's dead letters.

Every record lagless generates carries an :data:`ID_HEADER` header with its id (also a malformed
record, whose value may not parse), so tests, ledgers and the dead-letter paths count records by id.
A malformed record also carries :data:`MALFORMED_HEADER` naming what is wrong with it, one of
:class:`Malformation`'s values, which are also the error classes the pipeline's validation gives.
"""

from __future__ import annotations

from enum import StrEnum

ID_HEADER = "lagless-id"
MALFORMED_HEADER = "lagless-malformed"


class Malformation(StrEnum):
    """What a malformed record has wrong (the value of its :data:`MALFORMED_HEADER`)."""

    BROKEN_JSON = "broken_json"
    MISSING_FIELD = "missing_field"
    WRONG_TYPE = "wrong_type"
    NEGATIVE_AMOUNT = "negative_amount"
