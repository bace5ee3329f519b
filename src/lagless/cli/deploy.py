"""``lagless deploy render MODULE:APP``: Kubernetes manifests derived from an App.

See docs/deploy.md; the library is :mod:`lagless.deploy`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lagless.cli.common import note, options
from lagless.cli.run import load_app
from lagless.config import KafkaSettings, load_settings
from lagless.deploy.options import RenderOptions
from lagless.deploy.render import partitions, render, to_yaml, write

app = typer.Typer(help="Kubernetes manifests for a lagless.App.", no_args_is_help=True)


@app.command("render")
def render_command(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="module:attribute of a lagless.App")],
    name: Annotated[str | None, typer.Option(help="object names (default: the group)")] = None,
    namespace: Annotated[str | None, typer.Option(help="metadata.namespace")] = None,
    image: Annotated[str | None, typer.Option(help="container image (default NAME:latest)")] = None,
    replicas: Annotated[int, typer.Option(help="pods")] = 3,
    static: Annotated[
        bool | None,
        typer.Option(
            "--static/--no-static",
            help="StatefulSet, pod name = group.instance.id (default: if the app sets one)",
        ),
    ] = None,
    max_surge: Annotated[int | None, typer.Option(help="Deployment: pods above replicas")] = None,
    max_unavailable: Annotated[
        int | None, typer.Option(help="pods below replicas during a rollout")
    ] = None,
    min_ready: Annotated[
        int | None, typer.Option(help="minReadySeconds (default: the session timeout)")
    ] = None,
    grace_period: Annotated[
        int | None, typer.Option(help="terminationGracePeriodSeconds (default: the drain)")
    ] = None,
    port: Annotated[int | None, typer.Option(help="metrics/probe port (default: app's)")] = None,
    cpu: Annotated[str, typer.Option(help="CPU request")] = "250m",
    memory: Annotated[str, typer.Option(help="memory request and limit")] = "256Mi",
    kafka_bootstrap: Annotated[
        str | None, typer.Option(help="LAGLESS_BOOTSTRAP as the pods see the cluster")
    ] = None,
    config_map: Annotated[
        str | None, typer.Option(help="ConfigMap with LAGLESS_* settings (envFrom)")
    ] = None,
    secret: Annotated[
        str | None, typer.Option(help="Secret with LAGLESS_SASL_PASSWORD ... (envFrom)")
    ] = None,
    ca_secret: Annotated[
        str | None, typer.Option(help="Secret with ca.crt: mounted, LAGLESS_SSL_CA_LOCATION")
    ] = None,
    service_monitor: Annotated[
        bool, typer.Option("--service-monitor", help="a Prometheus Operator ServiceMonitor")
    ] = False,
    autoscale: Annotated[
        bool, typer.Option("--autoscale", help="a KEDA ScaledObject on the group's lag")
    ] = False,
    min_replicas: Annotated[
        int | None, typer.Option(help="--autoscale: fewest pods (default 1)")
    ] = None,
    lag_threshold: Annotated[
        int | None, typer.Option(help="--autoscale: lag per pod (default 1000)")
    ] = None,
    partitions_given: Annotated[
        int | None,
        typer.Option("--partitions", help="partition count (default: asked of the cluster)"),
    ] = None,
    console: Annotated[
        bool, typer.Option("--console", help="also the console/lag exporter (lagless ui)")
    ] = False,
    console_token_secret: Annotated[
        str | None, typer.Option(help="--console: Secret with LAGLESS_UI_TOKEN")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="write one file per object here (default: stdout)")
    ] = None,
) -> None:
    """Write the manifests of an App (Deployment or StatefulSet, Services, PDB, ...)."""
    render_options = RenderOptions.build(
        target=target, name=name, namespace=namespace, image=image, replicas=replicas,
        static=static, max_surge=max_surge, max_unavailable=max_unavailable,
        min_ready_s=min_ready, grace_period_s=grace_period, port=port, cpu=cpu, memory=memory,
        bootstrap=kafka_bootstrap, config_map=config_map, secret=secret, ca_secret=ca_secret,
        service_monitor=service_monitor, autoscale=autoscale, min_replicas=min_replicas,
        lag_threshold=lag_threshold, partitions=partitions_given, console=console,
        console_token_secret=console_token_secret,
    )  # fmt: skip
    the_app = load_app(target)
    connection = _configured(ctx)
    topics = [t for c in the_app.engine_configs() for t in c.topics]
    found = partitions(render_options, topics, connection)
    plan, documents = render(the_app, render_options, found, connection)
    if out is None:
        sys.stdout.write(to_yaml(documents))
    else:
        for path in write(documents, out):
            sys.stdout.write(f"{path}\n")
    kind = "StatefulSet" if plan.static else "Deployment"
    grace = plan.drain.describe() if grace_period is None else f"{grace_period} s (given)"
    note(f"{kind} {plan.name}: {render_options.replicas} replicas, grace period {grace}")
    if found is not None:
        note(f"partitions: {found.count} ({found.source}); at most {plan.max_replicas} replicas")


def _configured(ctx: typer.Context) -> KafkaSettings | None:
    """The cluster the user configured (-b, --config, LAGLESS_*), or None: render starts no
    embedded broker to ask it."""
    opts = options(ctx)
    settings = load_settings(opts.config, bootstrap=opts.bootstrap)
    return settings if settings.bootstrap is not None else None
