"""`gpuctl status`: expiry, each node's last configure result and the cost so far."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.commands import status
from toolkit.commands._reports import utc_iso
from toolkit.commands.configure import record_last_run
from toolkit.configure import converge
from toolkit.configure.ansible_run import NodeResult, RunResult
from toolkit.providers.lab import state as lab_state
from toolkit.spec.loader import load_spec
from toolkit.state import cluster_dir

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    monkeypatch.chdir(REPO)
    return tmp_path


def write_record(cluster: str, node: str, at: datetime) -> None:
    path = converge.record_path(cluster_dir(cluster), node)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": converge.RECORD_VERSION, "node": node}))
    os.utime(path, (at.timestamp(), at.timestamp()))


def test_lab_state_records_its_creation_time_once() -> None:
    state = lab_state.plan(load_spec(REPO / "examples/local-lab.yaml"))
    lab_state.save(state)
    assert state.created_at is None  # a plan is not a lab yet
    state.phase = "creating"
    lab_state.save(state)
    first = state.created_at
    assert first is not None
    assert first.endswith("Z")
    state.phase = "up"
    lab_state.save(state)
    loaded = lab_state.load(state.cluster)
    assert loaded is not None
    assert loaded.created_at == first


def test_lab_status_expiry_last_configure_and_cost() -> None:
    spec = load_spec(REPO / "examples/local-lab.yaml")  # ttl 8h
    state = lab_state.plan(spec)
    state.phase, state.created_at = "up", utc_iso(NOW - timedelta(hours=2))
    lab_state.save(state)
    n0, n1, _n2 = (n.name for n in state.nodes)
    write_record(spec.name, n0, NOW - timedelta(hours=1))
    write_record(spec.name, n1, NOW - timedelta(hours=1))
    record_last_run(spec.name, RunResult(nodes={n1: NodeResult(n1, verified=True)}, rc=0),
                    now=NOW - timedelta(minutes=5))
    raw = {"phase": "up", "nodes": [{"name": n.name, "sshd": "up", "namespace": None} for n in state.nodes]}
    report = status.build_status(spec, raw, now=NOW)
    assert report.created_at == "2026-03-01T10:00:00Z"
    assert report.expires_at == "2026-03-01T18:00:00Z"
    assert report.expired is False
    assert [n.last_configure.text for n in report.nodes] == [
        "ok at 2026-03-01T11:00:00Z", "verified at 2026-03-01T11:55:00Z", "no record"]
    assert report.nodes[0].details == {"sshd": "up", "namespace": None}
    assert report.cost_so_far.amount == 0.0
    assert report.cost_so_far.hours == 2.0
    text = status.render_status(report, now=NOW)
    assert "expires:      2026-03-01 18:00:00 UTC (in 6h00m) (lifecycle.ttl 8h)" in text
    assert f"  {n1}: sshd=up\n    last configure: verified at 2026-03-01T11:55:00Z" in text


def test_a_failed_node_says_failed_and_its_record_is_gone() -> None:
    spec = load_spec(REPO / "examples/local-lab.yaml")
    record_last_run(spec.name, RunResult(nodes={"lab-node-0": NodeResult("lab-node-0", ok=False)}, rc=2), now=NOW)
    assert status.last_configure(spec.name, "lab-node-0").text == "failed at 2026-03-01T12:00:00Z"


def test_cost_so_far_is_hours_times_the_catalog_price() -> None:
    spec = load_spec(REPO / "examples/single-gpu-lora.yaml")  # spot with a 5.0/h ceiling
    raw = {"exists": True, "created_at": utc_iso(NOW - timedelta(hours=3)),
           "expires_at": utc_iso(NOW + timedelta(hours=5)), "nodes": ["lora-gpu-0"]}
    report = status.build_status(spec, raw, now=NOW)
    assert report.phase == "present"
    assert report.expires_at == "2026-03-01T17:00:00Z"
    cost = report.cost_so_far
    assert (cost.amount, cost.currency, cost.per_hour, cost.hours) == (15.0, "CNY", 5.0, 3.0)
    assert "3.00 h x 5.00 CNY/h" in cost.basis
    # Past the expiry the cloud released the nodes: the count stops there.
    later = status.build_status(spec, raw, now=NOW + timedelta(hours=7))
    assert later.expired is True
    assert later.cost_so_far.amount == 40.0


def test_cost_is_unknown_not_zero_without_a_catalog_price() -> None:
    spec = load_spec(REPO / "examples/alicloud-erdma-2x8.yaml")  # the catalog has no price for this type
    raw = {"exists": True, "created_at": utc_iso(NOW - timedelta(hours=1)), "nodes": []}
    cost = status.build_status(spec, raw, now=NOW).cost_so_far
    assert cost.amount is None
    assert "ecs.ebmgn7ex.32xlarge" in cost.basis
    text = status.render_status(status.build_status(spec, raw, now=NOW), now=NOW)
    assert "cost so far:  unknown (the catalog has no price for ecs.ebmgn7ex.32xlarge)" in text


def test_cost_is_unknown_when_the_provider_gives_no_creation_time() -> None:
    spec = load_spec(REPO / "examples/single-gpu-lora.yaml")
    raw = {"exists": True, "expires_at": utc_iso(NOW + timedelta(hours=5))}
    report = status.build_status(spec, raw, now=NOW)
    assert report.expires_at == "2026-03-01T17:00:00Z"
    assert report.cost_so_far.amount is None
    assert report.cost_so_far.basis.startswith("unknown")


def test_status_of_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "examples/local-lab.yaml"]) == 0
    assert capsys.readouterr().out == "cluster lab (local): absent\n"
