"""Every `--json` document matches its schema in docs/schemas/, and the schemas match the models.

The schema files are generated from toolkit/commands/_reports.py; after an intended change rewrite
them with `GPUCTL_UPDATE_GOLDEN=1 pytest tests/cli/test_json.py` and update docs/json.md.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli.conftest import FakeDriver, fake_configure
from toolkit.cli import main
from toolkit.commands import _reports
from toolkit.providers.lab import state as lab_state
from toolkit.spec.loader import load_spec

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "docs" / "schemas"
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.yaml"))
UPDATE = os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1"
LAB = "examples/local-lab.yaml"


def check(command: str, document: Any) -> None:
    schema = json.loads((SCHEMAS / f"{command}.json").read_text())
    jsonschema.validate(document, schema, format_checker=jsonschema.FormatChecker())


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 0) -> Any:
    assert main(argv) == code
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout is the document and nothing else
    return document


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(REPO)
    return tmp_path / "home"


@pytest.mark.parametrize("command", sorted(_reports.DOCUMENTS))
def test_schema_files_match_the_models(command: str) -> None:
    path = SCHEMAS / f"{command}.json"
    if UPDATE:
        _reports.write_schemas(SCHEMAS)
    assert path.exists(), f"no {path}; run with GPUCTL_UPDATE_GOLDEN=1 and review it"
    assert json.loads(path.read_text()) == _reports.schema(command), f"{path} is stale; regenerate it"
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_every_documented_schema_is_described_in_json_md() -> None:
    text = (REPO / "docs" / "json.md").read_text()
    for command in _reports.DOCUMENTS:
        assert f"docs/schemas/{command}.json" in text or f"schemas/{command}.json" in text, command


@pytest.mark.parametrize("example", EXAMPLES)
def test_validate_and_plan_json_of_every_example(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    validated = run_json(["validate", "--json", f"examples/{example}"], capsys)
    check("validate", validated)
    assert validated["ok"] is True
    assert validated["specs"][0]["path"] == f"examples/{example}"
    check("plan", run_json(["plan", "--json", f"examples/{example}"], capsys))


def test_validate_json_reports_each_failure_and_keeps_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nprovider: local\n")
    document = run_json(["validate", "--json", LAB, str(bad)], capsys, code=3)
    check("validate", document)
    assert document["ok"] is False
    assert [s["ok"] for s in document["specs"]] == [True, False]
    assert document["specs"][1]["exit_code"] == 3
    assert document["specs"][1]["problems"][0] == f"{bad}:1: node_pools: required key is missing"
    assert len(document["specs"][1]["problems"]) > 1  # every problem, one per line


def test_status_json_of_a_cluster_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(["status", "--json", LAB], capsys)
    check("status", document)
    assert document["phase"] == "absent"
    assert document["exists"] is False
    assert document["cost_so_far"]["amount"] is None


@pytest.mark.skipif(os.geteuid() != 0, reason="`down` of a local lab needs root, even with nothing to remove")
def test_down_json_of_a_cluster_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(["down", "--json", LAB], capsys)
    check("down", document)
    assert document == {"cluster": "lab", "provider": "local", "removed": False,
                        "message": "lab: nothing to remove (no such cluster)"}


def plant_lab(created: datetime | None = None) -> lab_state.LabState:
    """A lab state as `up` leaves it (phase up), without creating anything: outputs and status
    read only the state file (and probe sshd, which answers nowhere here)."""
    state = lab_state.plan(load_spec(REPO / LAB))
    state.phase = "up"
    state.created_at = _reports.utc_iso(created or datetime.now(UTC) - timedelta(hours=1))
    lab_state.save(state)
    return state


def test_outputs_and_status_json_of_a_recorded_lab(capsys: pytest.CaptureFixture[str]) -> None:
    state = plant_lab()
    outputs = run_json(["outputs", "--json", LAB], capsys)
    check("outputs", outputs)
    assert [n["name"] for n in outputs["nodes"]] == [n.name for n in state.nodes]
    status = run_json(["status", "--json", LAB], capsys)
    check("status", status)
    assert status["phase"] == "up"
    assert status["created_at"] == state.created_at
    assert [n["name"] for n in status["nodes"]] == [n.name for n in state.nodes]
    assert {n["last_configure"]["text"] for n in status["nodes"]} == {"no record"}


def test_up_json_has_outputs_configure_and_mtu_and_progress_on_stderr(
    fake: FakeDriver, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["up", "--json", "--down-after", LAB]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    check("up", document)
    assert "creating nothing at all" in captured.err  # progress went to stderr
    assert "Summary (3 changed; 2 of 2 nodes ready):" in captured.err  # so did the text
    assert document["already_existed"] is False
    assert document["removed"] is True
    assert [n["result"] for n in document["configure"]["nodes"]] == ["verified", "ok"]
    assert [m["node"] for m in document["mtu_check"]] == ["lab-node-0", "lab-node-1"]
    assert fake.removed


def test_configure_json_and_a_failed_node(
    fake: FakeDriver, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    document = run_json(["configure", "--json", LAB], capsys)
    check("configure", document)
    assert document["ok"] is True
    monkeypatch.setattr("toolkit.configure.configure", fake_configure(ok=False))
    document = run_json(["configure", "--json", LAB], capsys, code=8)  # still a document, and exit 8
    check("configure", document)
    assert document["ok"] is False
    failed = document["nodes"][1]
    assert (failed["result"], failed["failed_task"], failed["message"]) == ("failed", "nccl_conf: install", "boom")


def test_down_json_after_removing(fake: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(["down", "--json", LAB], capsys)
    check("down", document)
    assert document["removed"] is True
    assert document["message"] == "lab: removed, and nothing named for it is left"


def test_a_document_that_breaks_its_schema_is_caught() -> None:
    """The check above can fail: a missing field and a wrong type are refused."""
    with pytest.raises(jsonschema.ValidationError):
        check("down", {"cluster": "lab", "provider": "local", "removed": "yes", "message": ""})
    with pytest.raises(jsonschema.ValidationError):
        check("status", {"cluster": "lab"})
