"""``lagless deploy render``'s library side: an App and the options in, YAML out.

:func:`render` derives the plan (:mod:`lagless.deploy.plan`) and the objects
(:mod:`lagless.deploy.manifests`); :func:`partitions` finds the partition count the replicas
are capped at (given, or asked of the cluster); :func:`to_yaml` and :func:`write` put the
objects on stdout (one multi-document stream) or one file each in a directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from lagless.app import App
from lagless.config import KafkaSettings
from lagless.deploy.manifests import manifests
from lagless.deploy.options import RenderOptions
from lagless.deploy.plan import Partitions, Plan, derive
from lagless.errors import ConfigError
from lagless.kafka.admin import list_topics

Documents = list[tuple[str, dict[str, Any]]]


def partitions(
    options: RenderOptions, topics: Sequence[str], connection: KafkaSettings | None
) -> Partitions | None:
    """``--partitions``, else the smallest partition count of ``topics`` on the cluster of
    ``connection`` (None when no cluster is configured: nothing is started to ask)."""
    if options.partitions is not None:
        return Partitions(options.partitions, "--partitions")
    if connection is None or connection.bootstrap is None:
        return None
    counts = dict(list_topics(connection.to_librdkafka()))
    missing = [t for t in topics if t not in counts]
    if missing:
        raise ConfigError(
            f"topic {missing[0]!r} does not exist on {connection.bootstrap}: create it first, or "
            "give --partitions N"
        )
    smallest = min(topics, key=lambda t: counts[t])
    return Partitions(counts[smallest], f"the cluster, topic {smallest}")


def render(
    app: App,
    options: RenderOptions,
    found: Partitions | None = None,
    connection: KafkaSettings | None = None,
) -> tuple[Plan, Documents]:
    """The plan and the objects for ``app``."""
    plan = derive(app, options, found, connection)
    return plan, manifests(plan)


def to_yaml(documents: Documents) -> str:
    """One YAML stream, a ``---`` document per object."""
    return "".join("---\n" + _dump(obj) for _, obj in documents)


class _Dumper(yaml.SafeDumper):
    """Block style with list items indented under their key (as kubectl and yamllint want)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """Several lines (the settings annotation's JSON) as a literal block, short lines."""
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _dump(obj: dict[str, Any]) -> str:
    text: str = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=72)
    return text


def write(documents: Documents, out: Path) -> list[Path]:
    """One file per object in ``out`` (made if missing); the paths written."""
    paths = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for index, (name, obj) in enumerate(documents):
            path = out / f"{index:02d}-{name}"
            path.write_text("---\n" + _dump(obj))
            paths.append(path)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot write there: {exc.strerror or exc}") from None
    return paths
