"""What ``lagless deploy render`` is asked for: one frozen, typed object validated at the boundary.

Everything here is the user's choice (flags); what comes from the App itself (its group, topics,
settings, drain, port) is derived in :mod:`lagless.deploy.plan`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lagless.errors import ConfigError

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")  # registry/name:tag@digest, no spaces
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$")
SERVER = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")
DEFAULT_PORT = 8000  # /metrics, /healthz, /readyz when the App names no port
CONSOLE_PORT = 8080
FLAGS = {  # fields whose flag has another name
    "bootstrap": "kafka_bootstrap", "min_ready_s": "min_ready", "grace_period_s": "grace_period",
}  # fmt: skip


class RenderOptions(BaseModel):
    """The flags of ``lagless deploy render`` (``None``: derived from the App)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str = Field(min_length=3, description="module:attribute of the App")
    name: str | None = None
    namespace: str | None = None
    image: str | None = None
    replicas: int = Field(3, ge=1, le=1000)
    static: bool | None = None
    max_surge: int | None = Field(None, ge=0)
    max_unavailable: int | None = Field(None, ge=0)
    min_ready_s: int | None = Field(None, ge=0)
    grace_period_s: int | None = Field(None, ge=1)
    port: int | None = Field(None, gt=0, lt=65536)
    cpu: str = "250m"
    memory: str = "256Mi"
    bootstrap: str | None = None
    config_map: str | None = None
    secret: str | None = None
    ca_secret: str | None = None
    service_monitor: bool = False
    autoscale: bool = False
    min_replicas: int = Field(1, ge=0)
    lag_threshold: int = Field(1000, ge=1, description="KEDA: records of lag per replica")
    partitions: int | None = Field(None, ge=1)
    console: bool = False
    console_token_secret: str | None = None
    console_storage: str = "1Gi"

    @field_validator("name", "namespace", "config_map", "secret", "ca_secret",
                     "console_token_secret")  # fmt: skip
    @classmethod
    def _dns_label(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > 63 or not DNS_LABEL.match(value)):
            raise ValueError(
                f"{value!r} is not a Kubernetes name (lower-case letters, digits and '-', "
                "at most 63)"
            )
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE.match(value):
            raise ValueError(f"{value!r} is not an image reference (e.g. registry/app:1.2)")
        return value

    @field_validator("cpu", "memory", "console_storage")
    @classmethod
    def _quantity(cls, value: str) -> str:
        if not QUANTITY.match(value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 250m, 256Mi)")
        return value

    @field_validator("bootstrap")
    @classmethod
    def _servers(cls, value: str | None) -> str | None:
        bad = [s for s in (value or "").split(",") if value is not None and not SERVER.match(s)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not HOST:PORT")
        return value

    @classmethod
    def build(cls, **values: Any) -> RenderOptions:
        """Validate ``values`` (``None`` means default/derived); one-line ConfigError."""
        given = {name: value for name, value in values.items() if value is not None}
        try:
            return cls(**given)
        except ValidationError as exc:
            raise ConfigError(_flag_error(exc)) from None


def _flag_error(exc: ValidationError) -> str:
    """The first error, named by its flag: ``--min-ready: Input should be ...``."""
    first = exc.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    flag = "--" + FLAGS.get(field, field).replace("_", "-")
    return f"{flag}: " + str(first["msg"]).removeprefix("Value error, ")


def dns_name(text: str) -> str:
    """``text`` as a Kubernetes name (a group id ``big_payments.v2``: ``big-payments-v2``)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    if not name:
        raise ConfigError(f"cannot make a Kubernetes name of {text!r}: give --name")
    return name
