"""The environment the price tests run their fake clouds in: loopback only, whatever the machine's
proxy settings, no real credential in reach, a gpuctl home and tccli folder of the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO

PROXIES_AND_KEYS = (
    "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
    "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN", "TENCENTCLOUD_SECRET_ID",
    "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SECURITY_TOKEN",
)


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *also: str) -> None:
    """Drop the proxies and cloud keys (and the variables `also` names), give the test its own home and
    tccli folder, and run it from the repository (the examples are named relative to it)."""
    for name in (*PROXIES_AND_KEYS, *also):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TENCENTCLOUD_SHARED_CREDENTIALS_DIR", str(tmp_path / "no-tccli"))
    monkeypatch.chdir(REPO)
