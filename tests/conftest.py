"""Shared test helpers: where the real captures live, and tier markers by folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import hypothesis  # noqa: F401  (see below)
import pytest

# Imported here, before any test runs: hypothesis's pytest plugin otherwise imports it at the end of a
# session that used no hypothesis test, and on this machine's CPython 3.11.7 pytest's rewrite of it then
# failed with "SystemError: AST constructor recursion depth mismatch" after the Pulumi mock tests had
# run (tests/providers/test_read_after_create.py alone): a crash after every test passed. The same
# message is CPython's python/cpython#106905 and pytest's pytest-dev/pytest#10763, both threaded runs.

REPO = Path(__file__).resolve().parent.parent
# Real captures from third-party machines, laid beside the checkout (see shared/fixtures/INDEX.md).
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
# The one reason a test that needs them gives when they are not there.
NO_SHARED_FIXTURES = "real captures expected at ../shared/fixtures (absent on a plain clone)"


def require_shared_fixtures() -> Path:
    """The shared fixtures folder, or skip the calling test (one reason for all of them).

    CI lays the folder beside the checkout and sets GPUCTL_REQUIRE_SHARED_FIXTURES=1 (.ci/run): there
    a missing folder is a failure, so no test can silently skip what CI is meant to run.
    """
    if not SHARED_FIXTURES.is_dir():
        if os.environ.get("GPUCTL_REQUIRE_SHARED_FIXTURES") == "1":
            pytest.fail(f"{NO_SHARED_FIXTURES}, and GPUCTL_REQUIRE_SHARED_FIXTURES=1 says they must be there")
        pytest.skip(NO_SHARED_FIXTURES)
    return SHARED_FIXTURES


def shared_fixture(relative: str) -> Path:
    """One file of the shared fixtures (`topo/...`), or skip the calling test."""
    return require_shared_fixtures() / relative


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    return require_shared_fixtures()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A test without a tier marker is a unit test.
    tiers = {"unit", "pulumi_mock", "fake_cloud", "lab", "gpu"}
    for item in items:
        if not tiers & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.unit)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The hostile-input corpora's counts, one line per surface (tests/hostile/harness.py)."""
    from tests.hostile.harness import TALLIES

    if TALLIES:
        terminalreporter.section("hostile-input corpora")
        for surface in sorted(TALLIES):
            terminalreporter.write_line(TALLIES[surface].line())
