"""The console's changes (only with ``--allow-writes``): an offset reset and a group or topic
delete, through the same code as ``lagless group reset-offsets``, ``group delete`` and
``topic delete``. Each is a POST with the page's CSRF token; the first POST shows what would
happen (a reset's old -> new offsets) and asks to confirm; only a POST with ``confirm=yes``
changes anything."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lagless.kafka.admin import delete_topic
from lagless.kafka.groups import delete_group
from lagless.kafka.reset import build_spec, execute_reset, plan_reset
from lagless.ui.pages import cell, e, group_href, table, topic_href

TARGETS = ("earliest", "latest")


def confirm_form(action: str, csrf: str, fields: Mapping[str, str], label: str) -> str:
    hidden = "".join(
        f"<input type='hidden' name='{e(k)}' value='{e(v)}'>" for k, v in fields.items()
    )
    return (
        f"<form method='post' action='{e(action)}'><input type='hidden' name='csrf' "
        f"value='{e(csrf)}'>{hidden}<input type='hidden' name='confirm' value='yes'>"
        f"<button id='confirm'>{e(label)}</button></form>"
    )


def reset_offsets(
    conf: Mapping[str, Any], group: str, form: Mapping[str, str], csrf: str
) -> tuple[str, str]:
    """(title, body) of the preview, or of the done reset when confirmed."""
    topic, to = form.get("topic", ""), form.get("to", "")
    if to not in TARGETS:
        raise ValueError(f"to={to!r}: choose earliest or latest")
    spec = build_spec(to == "earliest", to == "latest", None, None, None, None)
    rows = plan_reset(conf, group, {topic: ()}, spec)
    done = form.get("confirm") == "yes"
    if done:
        execute_reset(conf, group, rows)
    listing = table(
        "reset", (("partition", "partition"), ("old", "old offset"), ("new", "new offset")),
        ([cell(r.partition), cell(r.old), cell(r.new)] for r in rows),
    )  # fmt: skip
    if done:
        return "offsets reset", listing + f"<p><a href='{e(group_href(group))}'>back</a></p>"
    action = group_href(group) + "/reset-offsets"
    ask = confirm_form(action, csrf, {"topic": topic, "to": to}, f"reset to {to}")
    return f"reset offsets of {group} on {topic}?", listing + ask


def delete(kind: str, conf: Mapping[str, Any], name: str, form: Mapping[str, str],
           csrf: str) -> tuple[str, str]:  # fmt: skip
    href = group_href(name) if kind == "group" else topic_href(name)
    if form.get("confirm") != "yes":
        return f"delete {kind} {name}?", confirm_form(href + "/delete", csrf, {}, f"delete {kind}")
    if kind == "group":
        delete_group(conf, name)
    else:
        delete_topic(conf, name)
    return f"{kind} deleted", "<p><a href='/'>overview</a></p>"
