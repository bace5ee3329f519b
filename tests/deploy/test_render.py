"""``lagless deploy render``: manifests derived from the App, valid for Kubernetes, and the
one-line errors for what contradicts the App."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

import lagless
from lagless.deploy.options import RenderOptions
from lagless.deploy.plan import Partitions
from lagless.deploy.render import render, to_yaml, write
from lagless.errors import ConfigError
from tests.conftest import LAGLESS, VENV_BIN
from tests.deploy.apps import README_SERVICE, payments_app
from tests.deploy.crds import CUSTOM_RESOURCES

CONNECTION = {"config_map": "kafka", "secret": "kafka-sasl"}
K8S = "1.33.0"


def options(**values: Any) -> RenderOptions:
    return RenderOptions.build(target="service:app", **{**CONNECTION, **values})


def objects(app: Any, **values: Any) -> dict[str, dict[str, Any]]:
    partitions = values.pop("partitions", None)
    found = None if partitions is None else Partitions(partitions, "--partitions")
    _, documents = render(app, options(**values), found)
    return {obj["kind"] + ("/console" if "console" in obj["metadata"]["name"] else ""): obj
            for _, obj in documents}  # fmt: skip


def workload(app: Any, **values: Any) -> dict[str, Any]:
    found = objects(app, **values)
    return found.get("Deployment") or found["StatefulSet"]


def container(app: Any, **values: Any) -> dict[str, Any]:
    spec = workload(app, **values)["spec"]["template"]["spec"]
    result: dict[str, Any] = spec["containers"][0]
    return result


def env(app: Any, **values: Any) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(app, **values)["env"]}


def test_the_readme_app_renders_a_surge_deployment_with_probes_on_all_addresses() -> None:
    found = objects(payments_app())
    assert set(found) == {"Deployment", "Service", "PodDisruptionBudget"}
    deployment = found["Deployment"]["spec"]
    assert deployment["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }  # fmt: skip
    assert deployment["minReadySeconds"] == 10  # the session timeout (10 s default)
    pod = deployment["template"]["spec"]
    # shutdown budget 30 + last commit (session 10 + heartbeat 3) + DLQ 2 x 10 + output 10 + 5
    assert pod["terminationGracePeriodSeconds"] == 78
    app = pod["containers"][0]
    assert app["args"] == ["service:app"]
    assert app["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert app["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    # 8 failures x 10 s outlast the 78-s drain: a draining pod is not restarted mid-drain
    assert (app["livenessProbe"]["periodSeconds"], app["livenessProbe"]["failureThreshold"]) == (
        10, 8,
    )  # fmt: skip
    assert app["ports"][0]["containerPort"] == 8000
    names = env(payments_app())
    assert names["LAGLESS_METRICS_HOST"] == "0.0.0.0"
    assert names["LAGLESS_METRICS_PORT"] == "8000"
    assert app["envFrom"] == [
        {"configMapRef": {"name": "kafka"}},
        {"secretRef": {"name": "kafka-sasl"}},
    ]
    assert found["Service"]["spec"]["ports"][0]["port"] == 8000
    assert found["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1


def test_no_secret_value_is_ever_in_the_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGLESS_SASL_PASSWORD", "hunter2-secret")
    _, documents = render(payments_app(), options(autoscale=True), Partitions(12, "--partitions"))
    assert "hunter2" not in to_yaml(documents)
    assert "LAGLESS_SASL_PASSWORD" not in str(env(payments_app()))


def test_a_static_app_renders_a_statefulset_whose_pod_names_are_instance_ids() -> None:
    found = objects(payments_app(static_id="pay"))
    assert "Deployment" not in found
    sts = found["StatefulSet"]["spec"]
    assert sts["serviceName"] == "big-payments-headless"
    assert sts["updateStrategy"]["type"] == "RollingUpdate"
    assert "strategy" not in sts
    assert env(payments_app(static_id="pay"))["LAGLESS_STATIC_ID"] == {
        "fieldRef": {"fieldPath": "metadata.name"}
    }
    headless = [d for _, d in render(payments_app(), options(static=True))[1]
                if d["metadata"]["name"] == "big-payments-headless"]  # fmt: skip
    assert headless[0]["spec"]["clusterIP"] == "None"


@pytest.mark.parametrize(
    ("change", "field", "before", "after"),
    [
        ({"shutdown_budget_s": 60}, "grace", 78, 108),
        ({"session_timeout_ms": 6000, "heartbeat_interval_ms": 1500}, "grace", 78, 73),  # 72.5 up
        ({"output": None}, "grace", 78, 68),
        ({"static_id": "pay"}, "kind", "Deployment", "StatefulSet"),
        ({"app_options": {"metrics_port": 9100}}, "port", 8000, 9100),
    ],
)
def test_the_manifest_follows_the_app(
    change: dict[str, Any], field: str, before: object, after: object
) -> None:
    def figure(app: Any) -> object:
        w = workload(app)
        pod = w["spec"]["template"]["spec"]
        return {
            "grace": pod["terminationGracePeriodSeconds"],
            "kind": w["kind"],
            "port": pod["containers"][0]["ports"][0]["containerPort"],
        }[field]

    assert figure(payments_app()) == before
    assert figure(payments_app(**change)) == after
    if field == "port":  # the probes and the metrics Service follow the port by name
        app = payments_app(**change)
        assert env(app)["LAGLESS_METRICS_PORT"] == "9100"
        assert objects(app)["Service"]["spec"]["ports"][0]["port"] == 9100


@pytest.mark.parametrize(
    ("app_change", "values", "message"),
    [
        (
            {"static_id": "pay"},
            {"static": False},
            "sets static_id='pay': every pod of a Deployment",
        ),
        ({}, {"grace_period_s": 30}, "--grace-period 30 is shorter than the app's drain (78 s"),
        ({}, {"static": True, "max_surge": 1}, "StatefulSet: static members are replaced in place"),
        ({}, {"max_surge": 0, "max_unavailable": 0}, "a rollout could never move"),
        ({}, {"replicas": 12, "partitions": 12}, "a pod that owns no partition is never ready"),
        ({}, {"autoscale": True}, "--autoscale caps replicas at the topic's partition count"),
        ({}, {"console": True}, "--console serves on 0.0.0.0 in its pod and needs a token"),
        ({}, {"config_map": None, "secret": None}, "how do the pods reach Kafka?"),
        (
            {},
            {"name": "a" * 56},
            f"the name '{'a' * 56}' (from --name) makes '{'a' * 56}-metrics', 64 characters: "
            "Kubernetes allows 63; give a --name of at most 55",
        ),
        (
            {},
            {"name": "p" * 50, "console": True, "console_token_secret": "ui"},
            f"makes '{'p' * 50}-console-store', 64 characters",
        ),
        ({}, {"name": "s" * 53, "static": True, "max_surge": 0}, "a StatefulSet's name allows 52"),
        ({}, {"console_token_secret": "ui"}, "--console-token-secret applies to --console only"),
        ({}, {"min_replicas": 5}, "--min-replicas applies to --autoscale only"),
    ],
)
def test_contradictions_are_one_line_errors(
    app_change: dict[str, Any], values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        merged = {**CONNECTION, **values}
        partitions = merged.pop("partitions", None)
        found = None if partitions is None else Partitions(partitions, "--partitions")
        render(payments_app(**app_change), RenderOptions.build(target="s:app", **merged), found)
    assert "\n" not in str(err.value)


def test_names_derived_from_the_group_are_checked_like_a_name_given() -> None:
    """A group that starts with a digit, or one as long as Kubernetes allows: the Service
    NAME-metrics would be refused; the name of 55 characters is the longest that renders."""
    for group, message in [
        ("1payments", "the name '1payments' (from group '1payments') starts with a digit"),
        ("g" * 70, "makes '" + "g" * 63 + "-metrics', 71 characters"),
    ]:
        app = lagless.App(group=group)
        app.handler("payments", on_failure="skip")(lambda value: None)
        with pytest.raises(ConfigError, match=re.escape(message)) as err:
            render(app, options())
        assert "\n" not in str(err.value)
    names = {obj["metadata"]["name"] for obj in objects(payments_app(), name="n" * 55).values()}
    assert max(len(n) for n in names) == 63


def test_the_consumers_home_is_a_writable_empty_dir() -> None:
    """LAGLESS_HOME on an emptyDir: any uid can publish its instance status there."""
    for flags in ({}, {"static": True, "max_surge": 0}):
        pod = workload(payments_app(), **flags)["spec"]["template"]["spec"]
        home = env(payments_app(), **flags)["LAGLESS_HOME"]
        mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes[mounts[home]] == {"name": "home", "emptyDir": {}}


def test_autoscale_caps_replicas_at_the_partitions_less_the_surge() -> None:
    found = objects(payments_app(), autoscale=True, partitions=6, replicas=2)
    scaled = found["ScaledObject"]["spec"]
    assert scaled["maxReplicaCount"] == 5
    assert scaled["scaleTargetRef"]["kind"] == "Deployment"
    assert scaled["triggers"][0]["metadata"]["consumerGroup"] == "big-payments"
    assert scaled["triggers"][0]["metadata"]["topic"] == "payments"
    assert scaled["triggers"][0]["metadata"]["bootstrapServersFromEnv"] == "LAGLESS_BOOTSTRAP"


def test_the_console_has_one_replica_and_its_store_on_a_volume() -> None:
    found = objects(payments_app(), console=True, console_token_secret="ui")
    console = found["Deployment/console"]["spec"]
    assert console["replicas"] == 1
    assert console["strategy"] == {"type": "Recreate"}
    pod = console["template"]["spec"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "big-payments-console-store"
    ui = pod["containers"][0]
    assert ui["command"] == ["lagless"]
    assert ui["args"][:3] == ["ui", "--host", "0.0.0.0"]
    assert {"name": "LAGLESS_HOME", "value": "/var/lib/lagless"} in ui["env"]
    assert "PersistentVolumeClaim/console" in found


def all_objects(tmp: Path) -> list[Path]:
    readme = render(payments_app(), options(service_monitor=True, autoscale=True,
                    console=True, console_token_secret="ui", namespace="pay"),
                    Partitions(12, "--partitions"))[1]  # fmt: skip
    static = render(payments_app(static_id="pay"), options(service_monitor=True,
                    autoscale=True, bootstrap="kafka:9092", ca_secret="kafka-ca"),
                    Partitions(3, "--partitions"))[1]  # fmt: skip
    return write(readme, tmp / "readme") + write(static, tmp / "static")


def test_every_object_validates_offline_against_kubernetes_and_yamllint(tmp_path: Path) -> None:
    paths = all_objects(tmp_path)
    custom = 0
    for path in paths:
        obj = yaml.safe_load(path.read_text())
        schema = CUSTOM_RESOURCES.get((obj["apiVersion"], obj["kind"]))
        if schema is not None:  # a custom resource: checked against its CRD's fields we use
            jsonschema.validate(obj, schema)
            custom += 1
        else:
            kubernetes_validate.validate(obj, K8S, strict=True)
    assert custom >= 4  # ServiceMonitor x3, ScaledObject x2
    lint = subprocess.run(
        [str(VENV_BIN / "yamllint"), "--strict", *map(str, paths)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout


def test_kubernetes_validate_rejects_what_it_should(tmp_path: Path) -> None:
    """The validator is strict: an unknown field fails (so the pass above means something)."""
    obj = workload(payments_app())
    obj["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, K8S, strict=True)


def test_the_cli_renders_the_readme_app_and_says_one_line_for_an_error(tmp_path: Path) -> None:
    (tmp_path / "service.py").write_text(README_SERVICE)
    ok = subprocess.run(
        [LAGLESS, "deploy", "render", "service:app", "--config-map", "kafka", "--partitions",
         "12", "--out", str(tmp_path / "out")],
        check=False, capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "grace period 78 s = shutdown budget 30" in ok.stderr
    assert "partitions: 12 (--partitions); at most 11 replicas" in ok.stderr
    assert len(ok.stdout.splitlines()) == 3  # deployment, service, pdb
    bad = subprocess.run(
        [LAGLESS, "deploy", "render", "service:app", "--config-map", "kafka",
         "--grace-period", "20"],
        check=False, capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1
    assert "--grace-period 20 is shorter than the app's drain" in bad.stderr
    typo = subprocess.run(
        [LAGLESS, "deploy", "render", "service:app", "--config-map", "Kafka_Settings"],
        check=False, capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert typo.returncode == 2
    assert "--config-map: 'Kafka_Settings' is not a Kubernetes name" in typo.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--replica", "3"],
            "No such option: --replica (Possible options: --min-replicas, --replicas)",
        ),
        (["--image", "my image"], "--image: 'my image' is not an image reference"),
        (["--cpu", "lots"], "--cpu: 'lots' is not a Kubernetes quantity"),
        (["--kafka-bootstrap", "kafka"], "--kafka-bootstrap: 'kafka' is not HOST:PORT"),
        (["--min-ready", "-1"], "--min-ready: Input should be greater than or equal to 0"),
        (["--out", "/proc/nope/k8s"], "--out /proc/nope/k8s: cannot write there"),
    ],
)
def test_a_hostile_users_flags_are_one_line(tmp_path: Path, flags: list[str], message: str) -> None:
    (tmp_path / "service.py").write_text(README_SERVICE)
    done = subprocess.run(
        [LAGLESS, "deploy", "render", "service:app", "--config-map", "kafka", *flags],
        check=False, capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert done.stdout == ""
