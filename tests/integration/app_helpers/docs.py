"""The Python blocks of the docs, so tests run them as written."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def python_blocks(relative: str) -> list[str]:
    """Every ```python block of REPO/relative, in order."""
    text = (REPO / relative).read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def block_with(relative: str, needle: str) -> str:
    """The first ```python block of REPO/relative that contains ``needle``."""
    found = [b for b in python_blocks(relative) if needle in b]
    assert found, f"no python block with {needle!r} in {relative}"
    return found[0]
