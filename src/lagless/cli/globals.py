"""The global options, accepted anywhere on the command line (as kcat takes ``-b`` and ``-X``).

``lagless tail T -b host:9092`` means ``lagless -b host:9092 tail T``: before the command
line reaches the parser, :func:`hoist` moves every global option (and its value) in front of
the sub-command. Every command, present or added later, gets this for free; in return no
sub-command may define an option spelt like a global one (:data:`VALUED`, :data:`FLAGS`).
Everything after ``--`` is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from lagless.errors import ConfigError

VALUED = ("--bootstrap", "-b", "--config", "-X", "--state-dir")
"""Global options that take a value (``-b HOST``, ``-bHOST``, ``--bootstrap=HOST``)."""
FLAGS = ("--verbose", "-v", "-vv", "-vvv")
"""Global flags (``-v`` counts)."""


def _split(token: str) -> tuple[str, str | None] | None:
    """(option, attached value) when ``token`` is a global option, else None."""
    if token in FLAGS or token in VALUED:
        return token, None
    for name in VALUED:
        if name.startswith("--") and token.startswith(name + "="):
            return name, token[len(name) + 1 :]
        if not name.startswith("--") and token.startswith(name) and len(token) > len(name):
            return name, token[len(name) :]
    return None


def hoist(argv: Sequence[str]) -> list[str]:
    """``argv`` (without the program name) with the global options moved to the front, in
    their order; the rest keeps its order."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest.extend(argv[i:])
            break
        found = _split(token)
        if found is None:
            rest.append(token)
        elif found[0] in FLAGS or found[1] is not None:
            front.append(token)
        elif i + 1 < len(argv):
            front.extend((token, argv[i + 1]))
            i += 1
        else:
            front.append(token)  # its missing value: the parser says so
        i += 1
    return [*front, *rest]


def librdkafka_properties(pairs: Sequence[str]) -> dict[str, str]:
    """``-X key=value`` options as librdkafka properties; ConfigError for one without ``=``."""
    split = [pair.partition("=") for pair in pairs]
    for pair, (key, eq, _) in zip(pairs, split, strict=True):
        if not eq or not key.strip():
            raise ConfigError(f"-X {pair}: give a librdkafka property as key=value")
    return {key.strip(): value for key, _, value in split}
