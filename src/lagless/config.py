"""Connection settings: one frozen, typed object validated at the boundary.

Sources, highest precedence first: explicit values (CLI flags), environment variables
(``LAGLESS_BOOTSTRAP``, ``LAGLESS_SASL_PASSWORD``, ...), a TOML file (``--config`` or
``LAGLESS_CONFIG``), defaults. When no bootstrap is given, commands use the embedded broker.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from lagless.errors import ConfigError

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


class KafkaSettings(BaseSettings):
    """How to reach a Kafka cluster."""

    model_config = SettingsConfigDict(env_prefix="LAGLESS_", frozen=True, extra="forbid")

    bootstrap: str | None = Field(
        default=None, description="bootstrap.servers; None means the embedded broker"
    )
    client_id: str = "lagless"
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None  # mTLS: the client's certificate (PEM)
    ssl_key_location: str | None = None  # mTLS: its private key (PEM)
    ssl_key_password: SecretStr | None = None
    sasl_oauthbearer_token_endpoint_url: str | None = None  # OIDC client credentials
    sasl_oauthbearer_client_id: str | None = None
    sasl_oauthbearer_client_secret: SecretStr | None = None
    sasl_oauthbearer_scope: str | None = None
    librdkafka: dict[str, str] = Field(
        default_factory=dict, description="extra librdkafka properties, passed through"
    )

    @model_validator(mode="after")
    def _security_consistent(self) -> KafkaSettings:
        """Settings that cannot work together are refused here, not found out as a timeout."""
        protocol = self.security_protocol
        if self.sasl_mechanism and "SASL" not in protocol:
            raise ValueError(
                f"sasl_mechanism {self.sasl_mechanism} needs security_protocol SASL_SSL (or "
                f"SASL_PLAINTEXT), not {protocol}"
            )
        if "SASL" in protocol and not self.sasl_mechanism:
            raise ValueError(f"security_protocol {protocol} needs a sasl_mechanism")
        if self.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and not (
            self.sasl_username and self.sasl_password
        ):
            raise ValueError(f"sasl_mechanism {self.sasl_mechanism} needs sasl_username and "
                             "sasl_password")  # fmt: skip
        oidc = (self.sasl_oauthbearer_token_endpoint_url, self.sasl_oauthbearer_client_id,
                self.sasl_oauthbearer_client_secret)  # fmt: skip
        if any(oidc) and not (all(oidc) and self.sasl_mechanism == "OAUTHBEARER"):
            raise ValueError(
                "OAUTHBEARER (OIDC) needs sasl_mechanism OAUTHBEARER with "
                "sasl_oauthbearer_token_endpoint_url, _client_id and _client_secret"
            )
        tls = (self.ssl_ca_location, self.ssl_certificate_location, self.ssl_key_location)
        if any(tls) and "SSL" not in protocol:
            raise ValueError(
                f"ssl_* settings need security_protocol SSL or SASL_SSL, not {protocol}"
            )
        if bool(self.ssl_certificate_location) != bool(self.ssl_key_location):
            raise ValueError("mTLS needs both ssl_certificate_location and ssl_key_location")
        return self

    @field_validator("bootstrap")
    @classmethod
    def _bootstrap_has_ports(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        for server in value.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"bootstrap server {server!r} is not HOST:PORT")
        return value

    def with_bootstrap(self, bootstrap: str) -> KafkaSettings:
        """A copy that points at ``bootstrap``."""
        return self.model_copy(update={"bootstrap": bootstrap})

    def to_librdkafka(self) -> dict[str, Any]:
        """librdkafka properties for clients of this cluster (secrets revealed only here)."""
        if self.bootstrap is None:
            raise ConfigError("no bootstrap servers: resolve the embedded broker first")
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": self.client_id,
            "security.protocol": self.security_protocol,
        }
        if self.sasl_mechanism:
            conf["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            conf["sasl.username"] = self.sasl_username
        if self.sasl_password is not None:
            conf["sasl.password"] = self.sasl_password.get_secret_value()
        plain = {
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
            "sasl.oauthbearer.token.endpoint.url": self.sasl_oauthbearer_token_endpoint_url,
            "sasl.oauthbearer.client.id": self.sasl_oauthbearer_client_id,
            "sasl.oauthbearer.scope": self.sasl_oauthbearer_scope,
        }
        conf.update({k: v for k, v in plain.items() if v})
        secrets = {
            "ssl.key.password": self.ssl_key_password,
            "sasl.oauthbearer.client.secret": self.sasl_oauthbearer_client_secret,
        }
        conf.update({k: v.get_secret_value() for k, v in secrets.items() if v is not None})
        if self.sasl_oauthbearer_token_endpoint_url:
            conf["sasl.oauthbearer.method"] = "oidc"
        conf.update(self.librdkafka)
        return conf

    def describe(self) -> str:
        """A printable summary; never shows the password."""
        user = f" as {self.sasl_username}" if self.sasl_username else ""
        return f"{self.bootstrap or 'embedded broker'} ({self.security_protocol}{user})"


ENV_PREFIX = "LAGLESS_"
TEST_PREFIX = "LAGLESS_TEST_"  # the test suite's own variables (its cluster, its handlers)
OTHER_VARIABLES = frozenset(
    {
        "LAGLESS_CONFIG",
        "LAGLESS_HOME",
        "LAGLESS_SPARK_PREFORK",
        "LAGLESS_SPARK_NATIVE_READER",
        "LAGLESS_NATIVE_FETCH",
        "LAGLESS_UI_TOKEN",
    }
    | {"LAGLESS_METRICS_PORT", "LAGLESS_METRICS_HOST", "LAGLESS_STATIC_ID"}  # app.environment
)
"""``LAGLESS_*`` variables that are not :class:`KafkaSettings` fields but still mean something:
the settings file, the embedded broker's state directory, whether Spark's source runner is
forked from a warm process (:mod:`lagless.spark.connector.prefork`), whether Spark tasks read
Kafka through the C reader (:mod:`lagless.spark.connector.native_fetch`), and the console's token
(``lagless ui``)."""


def known_variables() -> frozenset[str]:
    """Every ``LAGLESS_*`` environment variable lagless reads."""
    fields = {ENV_PREFIX + name.upper() for name in KafkaSettings.model_fields}
    return frozenset(fields) | OTHER_VARIABLES


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning line per ``LAGLESS_*`` variable that is not a setting (a typo such as
    ``LAGLESS_BOOTSTRAPS`` would otherwise be ignored silently), with the closest real name."""
    env = os.environ if environ is None else environ
    known = known_variables()
    lines = []
    for name in sorted(env):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in known or upper.startswith(TEST_PREFIX):
            continue
        suffixes = sorted(k.removeprefix(ENV_PREFIX) for k in known)
        close = difflib.get_close_matches(name.upper().removeprefix(ENV_PREFIX), suffixes, 1, 0.6)
        hint = f" (did you mean {ENV_PREFIX}{close[0]}?)" if close else ""
        lines.append(f"{name} is not a lagless setting and is ignored{hint}")
    return lines


def load_settings(config_file: Path | None = None, **overrides: Any) -> KafkaSettings:
    """Build settings from flags (``overrides``, ``None`` means unset), env and a TOML file.

    The TOML file holds the same keys as :class:`KafkaSettings`, at top level or under
    ``[kafka]``. Raises :class:`ConfigError` with a one-line message on bad input.
    """
    path = config_file or (Path(p) if (p := os.environ.get("LAGLESS_CONFIG")) else None)
    file_values: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        file_values = dict(data.get("kafka", data))
        misspelt(file_values, path)
    flags = {k: v for k, v in overrides.items() if v is not None}
    try:
        env_only = KafkaSettings()
        env_set = env_only.model_fields_set
        merged = {**file_values, **{k: getattr(env_only, k) for k in env_set}, **flags}
        return KafkaSettings.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"invalid setting {where}: {message}" if where else message) from None


def misspelt(values: Mapping[str, Any], path: Path) -> None:
    """ConfigError naming a key of the settings file that is not a setting, with the closest
    real one (as the environment variables get)."""
    fields = sorted(KafkaSettings.model_fields)
    for key in values:
        if key in fields:
            continue
        close = difflib.get_close_matches(key, fields, 1, 0.6)
        hint = f" (did you mean {close[0]}?)" if close else f" (settings: {', '.join(fields)})"
        raise ConfigError(f"config file {path}: {key!r} is not a setting{hint}")
