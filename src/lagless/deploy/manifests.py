"""Kubernetes objects for a :class:`~lagless.deploy.plan.Plan`, as plain dicts.

:func:`manifests` gives ``(file name, object)`` pairs in apply order: the workload (a
``Deployment``, or a ``StatefulSet`` and its headless ``Service``), the metrics ``Service``, a
``PodDisruptionBudget``, and as asked a ``ServiceMonitor``, a KEDA ``ScaledObject`` (with a
``TriggerAuthentication`` for SASL) and the console (``lagless ui``: Deployment, Service,
PersistentVolumeClaim). Every value comes from the plan; nothing is secret.
"""

from __future__ import annotations

import json
import math
from typing import Any

from lagless.app import environment
from lagless.deploy.options import CONSOLE_PORT
from lagless.deploy.plan import Plan

Obj = dict[str, Any]

ANNOTATION = "lagless.dev"  # prefix of the annotations the lab reads back
STORE_DIR = "/var/lib/lagless"  # LAGLESS_HOME: the console's store on its volume, an emptyDir
# in the consumers' pods (the image's home is read-only to them)
CA_DIR = "/etc/lagless/ca"
LIVENESS_PERIOD_S = 10


def liveness_failures(grace_period_s: int) -> int:
    """Failed liveness probes before a restart: at least 3, and enough to outlast the grace
    period (a draining engine's loop stops turning: a probe must not cut the drain short)."""
    return max(3, math.ceil(grace_period_s / LIVENESS_PERIOD_S))


def manifests(plan: Plan) -> list[tuple[str, Obj]]:
    """Every object, named by file, in apply order."""
    out: list[tuple[str, Obj]] = []
    if plan.static:
        out.append(("service-headless.yaml", _service(plan, f"{plan.name}-headless", True)))
    out.append(("statefulset.yaml" if plan.static else "deployment.yaml", workload(plan)))
    out.append(("service-metrics.yaml", _service(plan, f"{plan.name}-metrics", False)))
    out.append(("poddisruptionbudget.yaml", _pdb(plan)))
    if plan.options.service_monitor:
        out.append(("servicemonitor.yaml", _service_monitor(plan, plan.name, "metrics")))
    if plan.options.autoscale:
        if plan.keda_sasl is not None and plan.options.secret is not None:
            out.append(("triggerauthentication.yaml", _trigger_auth(plan)))
        out.append(("scaledobject.yaml", _scaled_object(plan)))
    if plan.options.console:
        out.extend(_console(plan))
    return out


def _meta(plan: Plan, name: str, component: str = "consumer") -> Obj:
    meta: Obj = {"name": name, "labels": _labels(plan, component)}
    if plan.options.namespace:
        meta["namespace"] = plan.options.namespace
    return meta


def _labels(plan: Plan, component: str = "consumer") -> dict[str, str]:
    return {
        "app.kubernetes.io/name": plan.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "lagless",
    }


def _selector(plan: Plan, component: str = "consumer") -> dict[str, str]:
    return {k: v for k, v in _labels(plan, component).items() if k != "app.kubernetes.io/part-of"}


def workload(plan: Plan) -> Obj:
    """The Deployment (RollingUpdate with the plan's surge) or the StatefulSet."""
    meta = _meta(plan, plan.name)
    meta["annotations"] = {
        f"{ANNOTATION}/app": plan.options.target,
        f"{ANNOTATION}/group": plan.group,
        f"{ANNOTATION}/drain": plan.drain.describe(),
        f"{ANNOTATION}/settings": json.dumps(plan.settings, sort_keys=True, indent=1),
    }
    if plan.partitions is not None:
        meta["annotations"][f"{ANNOTATION}/partitions"] = (
            f"{plan.partitions.count} ({plan.partitions.source})"
        )
    spec: Obj = {
        "replicas": plan.options.replicas,
        "minReadySeconds": plan.min_ready_s,
        "selector": {"matchLabels": _selector(plan)},
        "template": {"metadata": {"labels": _labels(plan)}, "spec": _pod(plan)},
    }
    if plan.static:
        spec["serviceName"] = f"{plan.name}-headless"
        spec["podManagementPolicy"] = "OrderedReady"
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec}
    spec["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": plan.max_surge, "maxUnavailable": plan.max_unavailable},
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def _env(plan: Plan) -> list[Obj]:
    env: list[Obj] = [
        {"name": environment.METRICS_HOST, "value": "0.0.0.0"},
        {"name": environment.METRICS_PORT, "value": str(plan.port)},
        {"name": "LAGLESS_HOME", "value": STORE_DIR},  # instance status: a writable emptyDir
    ]
    if plan.static:
        env.append(
            {"name": environment.STATIC_ID,
             "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        )  # fmt: skip
    return env + _connection_env(plan)


def _connection_env(plan: Plan) -> list[Obj]:
    env: list[Obj] = []
    if plan.options.bootstrap:
        env.append({"name": "LAGLESS_BOOTSTRAP", "value": plan.options.bootstrap})
    if plan.options.ca_secret:
        env.append({"name": "LAGLESS_SSL_CA_LOCATION", "value": f"{CA_DIR}/ca.crt"})
    return env


def _env_from(plan: Plan) -> list[Obj]:
    refs: list[Obj] = []
    if plan.options.config_map:
        refs.append({"configMapRef": {"name": plan.options.config_map}})
    if plan.options.secret:
        refs.append({"secretRef": {"name": plan.options.secret}})
    return refs


def _ca_volume(plan: Plan, pod: Obj, container: Obj) -> None:
    if plan.options.ca_secret:
        pod["volumes"] = [
            *pod.get("volumes", []),
            {"name": "kafka-ca", "secret": {"secretName": plan.options.ca_secret}},
        ]
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            {"name": "kafka-ca", "mountPath": CA_DIR, "readOnly": True},
        ]


def _security() -> Obj:
    return {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def _pod(plan: Plan) -> Obj:
    container: Obj = {
        "name": "app",
        "image": plan.image,
        "args": [plan.options.target],
        "env": _env(plan),
        "ports": [{"name": "metrics", "containerPort": plan.port, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "metrics"},
            "periodSeconds": 5,
            "failureThreshold": 2,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "metrics"},
            "initialDelaySeconds": 10,
            "periodSeconds": LIVENESS_PERIOD_S,
            "failureThreshold": liveness_failures(plan.grace_period_s),
        },
        "resources": {
            "requests": {"cpu": plan.options.cpu, "memory": plan.options.memory},
            "limits": {"memory": plan.options.memory},
        },
        "securityContext": _security(),
        "volumeMounts": [{"name": "home", "mountPath": STORE_DIR}],
    }
    env_from = _env_from(plan)
    if env_from:
        container["envFrom"] = env_from
    pod: Obj = {
        "terminationGracePeriodSeconds": plan.grace_period_s,
        "containers": [container],
        "volumes": [{"name": "home", "emptyDir": {}}],
    }
    _ca_volume(plan, pod, container)
    return pod


def _service(plan: Plan, name: str, headless: bool) -> Obj:
    spec: Obj = {
        "selector": _selector(plan),
        "ports": [{"name": "metrics", "port": plan.port, "targetPort": "metrics"}],
    }
    if headless:
        spec["clusterIP"] = "None"
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(plan, name), "spec": spec}


def _pdb(plan: Plan) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(plan, plan.name),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": _selector(plan)}},
    }


def _service_monitor(plan: Plan, name: str, port: str, component: str = "consumer") -> Obj:
    endpoint: Obj = {"port": port, "path": "/metrics", "interval": "15s"}
    if component == "console":
        endpoint["authorization"] = {
            "type": "Bearer",
            "credentials": {"name": plan.options.console_token_secret, "key": "LAGLESS_UI_TOKEN"},
        }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": _meta(plan, name, component),
        "spec": {"selector": {"matchLabels": _selector(plan, component)}, "endpoints": [endpoint]},
    }


def _scaled_object(plan: Plan) -> Obj:
    assert plan.max_replicas is not None  # derive() refuses --autoscale without partitions
    triggers = []
    for topic in plan.topics:
        metadata: Obj = {
            "consumerGroup": plan.group,
            "topic": topic,
            "lagThreshold": str(plan.options.lag_threshold),
            "offsetResetPolicy": plan.offset_reset,
        }
        if plan.options.bootstrap:
            metadata["bootstrapServers"] = plan.options.bootstrap
        else:  # KEDA resolves it from the workload's container (its envFrom ConfigMap)
            metadata["bootstrapServersFromEnv"] = "LAGLESS_BOOTSTRAP"
        if plan.keda_sasl is not None:
            metadata["sasl"] = plan.keda_sasl
        if plan.keda_tls:
            metadata["tls"] = "enable"
        trigger: Obj = {"type": "kafka", "metadata": metadata}
        if plan.keda_sasl is not None and plan.options.secret is not None:
            trigger["authenticationRef"] = {"name": plan.name}
        triggers.append(trigger)
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": _meta(plan, plan.name),
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet" if plan.static else "Deployment",
                "name": plan.name,
            },
            "minReplicaCount": plan.options.min_replicas,
            "maxReplicaCount": plan.max_replicas,
            "triggers": triggers,
        },
    }


def _trigger_auth(plan: Plan) -> Obj:
    secret = plan.options.secret
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "TriggerAuthentication",
        "metadata": _meta(plan, plan.name),
        "spec": {
            "secretTargetRef": [
                {"parameter": "username", "name": secret, "key": "LAGLESS_SASL_USERNAME"},
                {"parameter": "password", "name": secret, "key": "LAGLESS_SASL_PASSWORD"},
            ]
        },
    }


def _console(plan: Plan) -> list[tuple[str, Obj]]:
    """``lagless ui`` with one replica, its store on a volume (Recreate: one writer)."""
    name = f"{plan.name}-console"
    token = {"name": plan.options.console_token_secret, "key": "LAGLESS_UI_TOKEN"}
    container: Obj = {
        "name": "console",
        "image": plan.image,
        "command": ["lagless"],
        "args": ["ui", "--host", "0.0.0.0", "--port", str(CONSOLE_PORT)],
        "env": [
            {"name": "LAGLESS_HOME", "value": STORE_DIR},
            {"name": "LAGLESS_UI_TOKEN", "valueFrom": {"secretKeyRef": token}},
            *_connection_env(plan),
        ],
        "ports": [{"name": "http", "containerPort": CONSOLE_PORT, "protocol": "TCP"}],
        "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 20},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "256Mi"},
        },
        "volumeMounts": [{"name": "store", "mountPath": STORE_DIR}],
        "securityContext": _security(),
    }
    env_from = _env_from(plan)
    if env_from:
        container["envFrom"] = env_from
    pod: Obj = {
        "containers": [container],
        "volumes": [{"name": "store", "persistentVolumeClaim": {"claimName": f"{name}-store"}}],
    }
    _ca_volume(plan, pod, container)
    labels = _labels(plan, "console")
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(plan, name, "console"),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": _selector(plan, "console")},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(plan, f"{name}-store", "console"),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": plan.options.console_storage}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(plan, name, "console"),
        "spec": {
            "selector": _selector(plan, "console"),
            "ports": [{"name": "http", "port": CONSOLE_PORT, "targetPort": "http"}],
        },
    }
    out = [("console-pvc.yaml", claim), ("console-deployment.yaml", deployment),
           ("console-service.yaml", service)]  # fmt: skip
    if plan.options.service_monitor:
        out.append(("console-servicemonitor.yaml", _service_monitor(plan, name, "http", "console")))
    return out
