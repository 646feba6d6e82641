"""`gpuctl plan --json` of every example is a stable golden file (cost per hour included).

Rewrite the golden files after an intended change with: GPUCTL_UPDATE_GOLDEN=1 pytest tests/cli
and review the diff like code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toolkit.cli import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "plan"
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.yaml"))
UPDATE = os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("example", EXAMPLES)
def test_plan_json_matches_golden(
    example: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)  # paths in messages stay relative, so the file is the same on any machine
    monkeypatch.delenv("ALIBABA_CLOUD_ACCOUNT_TYPE", raising=False)  # the Alibaba site: unset, on any machine
    assert main(["plan", "--json", f"examples/{example}"]) == 0
    out = capsys.readouterr().out
    golden = GOLDEN / example.replace(".yaml", ".json")
    if UPDATE:
        golden.write_text(out)
    assert golden.exists(), f"no golden file {golden}; run with GPUCTL_UPDATE_GOLDEN=1 and review it"
    assert json.loads(out) == json.loads(golden.read_text()), f"plan of {example} changed; see the diff"


def test_every_example_validates(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert main(["validate", *[f"examples/{e}" for e in EXAMPLES]]) == 0
    out = capsys.readouterr().out
    assert out.count(": ok (") == len(EXAMPLES)


def test_local_lab_plan_costs_nothing(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert main(["plan", "--json", "examples/local-lab.yaml"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["nodes"] == 3
    assert plan["cost"]["per_hour"] == 0.0
    assert plan["cost"]["for_ttl"] == 0.0
    assert [r["type"] for r in plan["resources"]] == ["lab:rootfs", "lab:bridge", "lab:bridge", "lab:node"]
