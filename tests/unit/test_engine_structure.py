"""The engine's structure: no import cycle inside the package, no part referring back to the
Engine (each is built with only what it needs), no module over the size limit, no mixins."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import lagless.engine
from lagless.engine import Engine, EngineConfig

PACKAGE = Path(lagless.engine.__file__).parent
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports (``from a.b import c`` counts ``a.b.c`` when
    that is a module, else ``a.b``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m in modules}


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: imports_of(path, modules) - {name} for name, path in paths.items()}


def test_no_import_cycle_inside_the_engine() -> None:
    edges = graph()
    edges = {m: {t for t in ts if t != "lagless.engine"} for m, ts in edges.items()}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_only_the_package_front_imports_the_engine_loop() -> None:
    importers = {m for m, ts in graph().items() if "lagless.engine.loop" in ts}
    assert importers == {"lagless.engine"}


def test_parts_hold_no_reference_to_the_engine() -> None:
    config = EngineConfig.build(topics=("t",), group="g", on_failure="skip")
    engine = Engine({"bootstrap.servers": "127.0.0.1:1"}, config, lambda r: None)
    parts = [engine.intake, engine.offsets, engine.completions, engine.launcher,
             engine.rebalance, engine.watch, engine.strategy, engine.owned, engine.tally,
             engine.lifecycle]  # fmt: skip
    for part in parts:
        for name, value in vars(part).items():
            assert value is not engine, (type(part).__name__, name)
            assert getattr(value, "__self__", None) is not engine, (type(part).__name__, name)


def test_the_engine_has_no_mixin_bases_and_no_module_is_too_long() -> None:
    assert Engine.__bases__ == (object,)
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
    assert "NotImplementedError" not in inspect.getsource(lagless.engine.loop)
