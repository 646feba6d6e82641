"""Shared test helpers: where the real captures live, and tier markers by folder."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Real captures from third-party machines, laid beside the checkout (see shared/fixtures/INDEX.md).
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    assert SHARED_FIXTURES.is_dir(), f"real captures expected at {SHARED_FIXTURES}"
    return SHARED_FIXTURES


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A test without a tier marker is a unit test.
    tiers = {"unit", "pulumi_mock", "fake_cloud", "lab", "gpu"}
    for item in items:
        if not tiers & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.unit)
