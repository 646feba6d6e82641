"""Fixtures the providers' unit tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A gpuctl home of the test's own (GPUCTL_HOME), not yet created."""
    home = tmp_path / "home"
    monkeypatch.setenv("GPUCTL_HOME", str(home))
    return home
