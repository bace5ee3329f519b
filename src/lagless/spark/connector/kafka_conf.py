"""Kafka client settings across the JVM/librdkafka line, both ways.

A query written for Spark's ``kafka`` format passes Java client properties as ``kafka.*``
options; ``lagless-kafka`` runs librdkafka. :func:`librdkafka_conf` translates the common Java
ones and rejects the others with one line naming them (instead of an error deep in a task's
trace). :func:`java_options` goes the other way for ``--source jvm``.

- ``sasl.jaas.config`` (``PlainLoginModule`` / ``ScramLoginModule``) -> ``sasl.username``,
  ``sasl.password``;
- ``ssl.truststore.location`` with ``ssl.truststore.type=PEM`` -> ``ssl.ca.location``;
- ``ssl.keystore.location`` with ``ssl.keystore.type=PKCS12`` -> ``ssl.keystore.location``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lagless.errors import ConfigError

JAAS_RE = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+required\s+(?P<args>.*?);?\s*$", re.DOTALL | re.IGNORECASE
)
JAAS_ARG_RE = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# Spark's own source rejects these too: the source manages them.
SPARK_MANAGED = {
    "auto.offset.reset": "use startingOffsets",
    "enable.auto.commit": "the source never commits to Kafka",
    "key.deserializer": "keys are always binary: cast the key column",
    "value.deserializer": "values are always binary: cast the value column",
    "key.serializer": "write a binary or string key column",
    "value.serializer": "write a binary or string value column",
    "interceptor.classes": "Java interceptors cannot run in librdkafka",
}
JAVA_ONLY = (
    "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.login.class",
    "ssl.truststore.password",
    "ssl.keystore.password",
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.provider",
    "ssl.trustmanager.algorithm",
    "ssl.keymanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    "security.providers",
)


def _jaas(text: str) -> dict[str, str]:
    match = JAAS_RE.match(text)
    if match is None or match.group("module") not in LOGIN_MODULES:
        raise ConfigError(
            "kafka.sasl.jaas.config: only PlainLoginModule and ScramLoginModule translate to "
            "librdkafka; for other mechanisms set librdkafka's kafka.sasl.* properties"
        )
    args = dict(JAAS_ARG_RE.findall(match.group("args")))
    if "username" not in args:
        raise ConfigError('kafka.sasl.jaas.config has no username="..."')
    return {"sasl.username": args["username"], "sasl.password": args.get("password", "")}


def _store(conf: dict[str, str], kind: str, wanted: str, target: str) -> dict[str, str]:
    location = conf.pop(f"ssl.{kind}.location", None)
    store_type = conf.pop(f"ssl.{kind}.type", "JKS").upper()
    if location is None:
        return {}
    if store_type != wanted:
        raise ConfigError(
            f"kafka.ssl.{kind}.location: a {store_type} {kind} is Java-only; convert it to "
            f"{wanted} (ssl.{kind}.type={wanted}) or set librdkafka's kafka.{target}"
        )
    return {target: location}


def librdkafka_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``kafka.*`` options (without the prefix) as librdkafka properties; ConfigError (one
    line) for a Java-only property that does not translate."""
    out = dict(conf)
    for key, why in SPARK_MANAGED.items():
        if key in out:
            raise ConfigError(f"option kafka.{key} is not supported: {why}")
    java = sorted(k for k in out if k in JAVA_ONLY)
    if java:
        raise ConfigError(
            f"Java-only Kafka client properties have no librdkafka equivalent: "
            f"{', '.join('kafka.' + k for k in java)}"
        )
    jaas = out.pop("sasl.jaas.config", None)
    if jaas is not None:
        out.update(_jaas(jaas))
    if "ssl.truststore.type" in out or "ssl.truststore.location" in out:
        out.update(_store(out, "truststore", "PEM", "ssl.ca.location"))
    if "ssl.keystore.type" in out:
        out.update(_store(out, "keystore", "PKCS12", "ssl.keystore.location"))
    return dict(sorted(out.items()))


def java_options(kafka: Mapping[str, Any]) -> dict[str, str]:
    """librdkafka settings as ``kafka.*`` Java client properties (the common subset)."""
    out = {"kafka.bootstrap.servers": str(kafka["bootstrap.servers"])}
    for key in ("security.protocol", "sasl.mechanism"):
        if key in kafka:
            out[f"kafka.{key}"] = str(kafka[key])
    if "sasl.username" in kafka:
        module = (
            "org.apache.kafka.common.security.scram.ScramLoginModule"
            if str(kafka.get("sasl.mechanism", "")).startswith("SCRAM")
            else "org.apache.kafka.common.security.plain.PlainLoginModule"
        )
        user, password = kafka["sasl.username"], kafka.get("sasl.password", "")
        out["kafka.sasl.jaas.config"] = (
            f'{module} required username="{user}" password="{password}";'
        )
    if "ssl.ca.location" in kafka:
        out["kafka.ssl.truststore.type"] = "PEM"
        out["kafka.ssl.truststore.location"] = str(kafka["ssl.ca.location"])
    return out
