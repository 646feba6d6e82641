"""`gpuctl configure --nodes`: names the cluster does not have are refused before anything runs,
and the failure hint names the nodes to re-run, never an empty --nodes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli.conftest import FakeDriver
from toolkit.cli import main
from toolkit.commands.configure import check_node_names, failure
from toolkit.configure.ansible_run import NodeResult, RunResult
from toolkit.errors import UsageError

LAB = "examples/local-lab.yaml"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))


def test_an_unknown_node_is_a_usage_error_that_names_it_and_runs_nothing(
    fake: FakeDriver, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[object] = []
    monkeypatch.setattr("toolkit.configure.configure", lambda *a, **k: ran.append(a))
    assert main(["configure", LAB, "--nodes", "lab-node-1", "lab-node-9"]) == 2
    err = capsys.readouterr().err
    assert "--nodes: no node named 'lab-node-9' in this cluster" in err
    assert "its nodes are lab-node-0, lab-node-1" in err
    assert "Traceback" not in err
    assert ran == []


def test_a_known_node_runs_that_node_alone(fake: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["configure", LAB, "--nodes", "lab-node-1"]) == 0
    out = capsys.readouterr().out
    assert "Summary (3 changed; 1 of 1 nodes ready):" in out
    assert "lab-node-0" not in out


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_hostile_names_are_refused_and_shown_escaped(name: str) -> None:
    known = ["lab-node-0", "lab-node-1"]
    if name in known:
        return
    with pytest.raises(UsageError) as refused:
        check_node_names([name], known)
    # repr() shows a newline or escape as \n or \x1b: the message stays one line on the terminal.
    assert refused.value.message == f"--nodes: no node named {name!r} in this cluster"
    assert "\n" not in refused.value.message
    assert "\x1b" not in refused.value.message


def failed(count: int) -> RunResult:
    nodes = {f"n-{i}": NodeResult(f"n-{i}", ok=False, failed_task="mtu: check", message="x") for i in range(count)}
    nodes["ok-0"] = NodeResult("ok-0")
    return RunResult(nodes=nodes, rc=2)


def test_the_hint_names_at_most_20_nodes_and_says_how_many_failed() -> None:
    few = failure("spec.yaml", failed(2))
    assert few.message == "configure failed on n-0, n-1"
    assert "configure spec.yaml --nodes n-0 n-1` to re-run just those; the 1 that succeeded" in (few.hint or "")
    many = failure("spec.yaml", failed(25))
    assert many.message.endswith("n-19 and 5 more")
    assert "--nodes n-0 n-1" in (many.hint or "")
    assert " n-20" not in (many.hint or "")
    assert "to re-run the first 20 of the 25;" in (many.hint or "")


def test_a_playbook_that_stopped_before_any_node_gets_no_empty_nodes_option() -> None:
    stopped = failure("spec.yaml", RunResult(nodes={}, rc=4))
    assert stopped.message == "configure failed: the playbook stopped before any node reported"
    assert "--nodes" not in (stopped.hint or "")
