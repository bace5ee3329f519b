"""The custom resources' fields the renderer writes, as JSON schemas taken from their CRDs
(Prometheus Operator's ServiceMonitor, KEDA's ScaledObject and TriggerAuthentication): the
Kubernetes schemas do not know them, so the tests check them apart."""

from __future__ import annotations

from typing import Any

STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
META = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                   "labels": STRING_MAP},
}  # fmt: skip
SELECTOR = {
    "type": "object",
    "properties": {"matchLabels": STRING_MAP},
    "additionalProperties": False,
}
SECRET_KEY = {"type": "object", "required": ["name", "key"],
              "properties": {"name": {"type": "string"}, "key": {"type": "string"}},
              "additionalProperties": False}  # fmt: skip


def resource(api: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "additionalProperties": False,
        "properties": {"apiVersion": {"const": api}, "kind": {"const": kind}, "metadata": META,
                       "spec": spec},
    }  # fmt: skip


SERVICE_MONITOR = resource("monitoring.coreos.com/v1", "ServiceMonitor", {
    "type": "object", "required": ["selector", "endpoints"], "additionalProperties": False,
    "properties": {
        "selector": SELECTOR,
        "endpoints": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "port": {"type": "string"}, "path": {"type": "string"},
                "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                "authorization": {"type": "object", "additionalProperties": False, "properties": {
                    "type": {"type": "string"}, "credentials": SECRET_KEY}},
            }}},
    },
})  # fmt: skip

SCALED_OBJECT = resource("keda.sh/v1alpha1", "ScaledObject", {
    "type": "object", "required": ["scaleTargetRef", "triggers"], "additionalProperties": False,
    "properties": {
        "scaleTargetRef": {"type": "object", "required": ["name"], "additionalProperties": False,
                           "properties": {"apiVersion": {"type": "string"},
                                          "kind": {"enum": ["Deployment", "StatefulSet"]},
                                          "name": {"type": "string"}}},
        "minReplicaCount": {"type": "integer", "minimum": 0},
        "maxReplicaCount": {"type": "integer", "minimum": 1},
        "triggers": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["type", "metadata"], "additionalProperties": False,
            "properties": {"type": {"const": "kafka"}, "metadata": STRING_MAP,
                           "authenticationRef": {"type": "object", "required": ["name"]}}}},
    },
})  # fmt: skip

TRIGGER_AUTHENTICATION = resource("keda.sh/v1alpha1", "TriggerAuthentication", {
    "type": "object", "additionalProperties": False,
    "properties": {"secretTargetRef": {"type": "array", "items": {
        "type": "object", "required": ["parameter", "name", "key"], "additionalProperties": False,
        "properties": {"parameter": {"type": "string"}, "name": {"type": "string"},
                       "key": {"type": "string"}}}}},
})  # fmt: skip

CUSTOM_RESOURCES = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
    ("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT,
    ("keda.sh/v1alpha1", "TriggerAuthentication"): TRIGGER_AUTHENTICATION,
}
