"""Hand-made lab timelines shared by the measures and page tests (no broker)."""

from __future__ import annotations

from lagless.lab.model import EventKind, InstanceEvent, ScenarioData, Trigger, TriggerKind, Window

K = EventKind
WINDOWS = [
    Window("warm-up", 10.0, 20.0),
    Window("rollout-1", 20.0, 60.0),
    Window("cool-down", 60.0, 80.0),
]


def ev(
    ts: float, instance: str, kind: EventKind, *parts: int, left: bool | None = None
) -> InstanceEvent:
    return InstanceEvent(ts, instance, kind, tuple(parts), left)


def service_start(*members: tuple[str, tuple[int, ...]]) -> list[InstanceEvent]:
    """Members subscribed at 0, assigned at 1, consuming at 1.1."""
    out: list[InstanceEvent] = []
    for name, parts in members:
        out += [
            ev(0.0, name, K.SUBSCRIBED),
            ev(1.0, name, K.ASSIGNED, *parts),
            ev(1.1, name, K.CONSUMING, *parts),
        ]
    return out


def initial_triggers(*names: str) -> list[Trigger]:
    return [Trigger(0.0, TriggerKind.START, name, 0) for name in names]


def eager_stop_the_world() -> ScenarioData:
    """Eager, no leave on close: a stops at 20 and stays in the group until its session expires
    (40.5); c joins at 21; everything is consumed again at 41.5."""
    events = [
        *service_start(("a", (0, 1)), ("b", (2, 3))),
        ev(20.1, "a", K.STOPPING),
        ev(20.5, "a", K.STOPPED, left=False),
        ev(21.2, "c", K.SUBSCRIBED),
        ev(40.5, "b", K.REVOKED, 2, 3),
        ev(41.0, "b", K.ASSIGNED, 2, 3),
        ev(41.0, "c", K.ASSIGNED, 0, 1),
        ev(41.2, "b", K.CONSUMING, 2, 3),
        ev(41.5, "c", K.CONSUMING, 0, 1),
    ]
    triggers = [
        *initial_triggers("a", "b"),
        Trigger(20.0, TriggerKind.STOP, "a", 1),
        Trigger(21.0, TriggerKind.START, "c", 1),
    ]
    return ScenarioData(0.0, 90.0, 4, events=events, triggers=triggers, windows=list(WINDOWS))


def cooperative_surge() -> ScenarioData:
    """Cooperative-sticky, surge: c joins at 20; p1 moves from a to c over two quick rounds; the
    other partitions never stop."""
    events = [
        *service_start(("a", (0, 1)), ("b", (2, 3))),
        ev(20.0, "c", K.SUBSCRIBED),
        ev(21.0, "a", K.ASSIGNED),
        ev(21.0, "b", K.ASSIGNED),
        ev(21.0, "c", K.ASSIGNED),
        ev(21.05, "a", K.REVOKED, 1),
        ev(21.3, "a", K.ASSIGNED),
        ev(21.3, "b", K.ASSIGNED),
        ev(21.3, "c", K.ASSIGNED, 1),
        ev(21.4, "c", K.CONSUMING, 1),
    ]
    triggers = [*initial_triggers("a", "b"), Trigger(19.9, TriggerKind.START, "c", 1)]
    return ScenarioData(0.0, 90.0, 4, events=events, triggers=triggers, windows=list(WINDOWS))
