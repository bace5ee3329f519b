"""Apps the deploy tests render: the README's, and variations of it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import lagless
from tests.integration.app_helpers.docs import python_blocks

README_SERVICE = python_blocks("README.md")[0]  # the README's App, as written


class Payment(BaseModel):
    payment_id: str
    amount: float


def payments_app(
    output: str | None = "payments-big", app_options: dict[str, Any] | None = None, **options: Any
) -> lagless.App:
    """The README's app; ``output=None`` without its output, ``options`` for the handler,
    ``app_options`` for ``App(...)``."""
    app = lagless.App(group="big-payments", **(app_options or {}))

    @app.handler("payments", ordering="key", max_in_flight=500, dlq="payments-dlq",
                 value=Payment, output=output, **options)  # fmt: skip
    def big(payment: Payment) -> Payment | None:
        return payment if payment.amount > 100 else None

    return app
