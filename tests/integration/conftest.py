"""Fixtures for integration tests that steer a broker into failing on purpose, and a real
browser for page tests (tests/integration/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.integration.browser import launched
from tests.integration.engine_helpers.faults import FaultyMock
from tests.integration.engine_helpers.group import Group

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture
def faulty_mock() -> Iterator[FaultyMock]:
    """A mock cluster of this test's own, whose requests can be made to fail."""
    with FaultyMock() as mock:
        yield mock


@pytest.fixture
def faulty_group(faulty_mock: FaultyMock, tmp_path: Path) -> Iterator[Group]:
    """``lagless consume`` members of one group on ``faulty_mock``; killed at the end."""
    members = Group(faulty_mock.bootstrap, tmp_path)
    try:
        yield members
    finally:
        members.kill_all()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium driven by Playwright (tests/integration/browser.py); skips where it is missing.
    One per module, not per session: Playwright's sync API keeps an event loop running in the
    thread while it is open, and a later test of the same worker calling ``asyncio.run`` fails."""
    with launched() as b:
        yield b
