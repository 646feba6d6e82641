"""The Tencent flagship examples' plan says one MTU (issue 21, "Both"): the MTU the nodes get, once, and
one warning about whether the catalog knows the type carries it, never two that contradict each other
or the same one per pool."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.cli import main

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("example", ["tencentcloud-hcc-2x8.yaml", "tencentcloud-hcc-two-pools.yaml"])
def test_the_flagship_plan_says_one_mtu(example: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert main(["plan", f"examples/{example}"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(", fabric rdma, MTU 8500")
    assert set(re.findall(r"(?i)\bmtu:? (\d+)", out)) == {"8500"}
    mtu_warnings = [line for line in out.splitlines() if "network.mtu" in line]
    assert mtu_warnings == [
        f"  ! examples/{example}: network.mtu: 8500: the catalog does not know whether HCCG5v.24XLARGE384 carries "
        "jumbo frames; configure verifies it with a do-not-fragment ping"]
