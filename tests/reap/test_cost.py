"""`gpuctl cost SPEC`: spent so far and projected to the TTL, with literal numbers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.reap.conftest import REPO
from toolkit.cli import main
from toolkit.commands.cost import build_cost, render_cost
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.unit

# Two GT4.4XLARGE96 at the catalog's 28.64 CNY/h (Tencent's GPU price overview, read 2026-11-29): 57.28 CNY/h.
def gt4_spec(name: str) -> str:
    """Two GT4.4XLARGE96 in ap-shanghai-5 for 10 h: the Tencent spec the cost and stack-state tests share."""
    return f"""\
name: {name}
provider: tencentcloud
region: ap-shanghai
zone: ap-shanghai-5
node_pools:
  - name: gpu
    instance_type: GT4.4XLARGE96
    count: 2
    system_disk: {{size_gb: 100, category: CLOUD_BSSD}}
network:
  fabric: tcp
  admin_cidr: 203.0.113.0/24
ssh:
  public_key: {REPO / "examples" / "ssh" / "example_ed25519.pub"}
lifecycle:
  ttl: 10h
"""


SPEC = gt4_spec("gt4-cost")
CREATED = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def spec_path(tmp_path: Path) -> Path:
    path = tmp_path / "gt4.yaml"
    path.write_text(SPEC)
    return path


def test_spent_and_projected_with_literal_numbers(spec_path: Path) -> None:
    raw = {"exists": True, "created_at": "2026-03-01T09:00:00Z", "expires_at": "2026-03-01T19:00:00Z"}
    report = build_cost(load_spec(spec_path), raw, now=CREATED + timedelta(hours=3))
    assert (report.per_hour, report.currency, report.ttl_hours) == (57.28, "CNY", 10.0)
    assert (report.spent.hours, report.spent.amount) == (3.0, 171.84)
    assert (report.projected, report.remaining) == (572.8, 400.96)
    assert report.expires_at == "2026-03-01T19:00:00Z"
    assert report.price_sources[0].startswith("gpu: GT4.4XLARGE96 x 2, pay-as-you-go price (official list), https://")
    assert report.price_sources[0].endswith("(read 2026-11-29)")
    text = render_cost(report)
    assert "spent:      171.84 CNY (3.00 h x 57.28 CNY/h" in text
    assert "by the TTL: 572.80 CNY (10 h)" in text
    assert "remaining:  400.96 CNY" in text


def test_past_the_ttl_spent_stops_at_the_expiry(spec_path: Path) -> None:
    raw = {"exists": True, "created_at": "2026-03-01T09:00:00Z", "expires_at": "2026-03-01T19:00:00Z"}
    report = build_cost(load_spec(spec_path), raw, now=CREATED + timedelta(days=2))
    assert (report.spent.hours, report.spent.amount, report.remaining) == (10.0, 572.8, 0.0)


def test_a_cluster_that_does_not_exist_has_spent_nothing_known(spec_path: Path) -> None:
    report = build_cost(load_spec(spec_path), {"exists": False}, now=CREATED)
    assert (report.exists, report.spent.amount, report.remaining, report.projected) == (False, None, None, 572.8)
    assert "not running: nothing spent so far" in render_cost(report)


def test_cost_json_through_the_cli(spec_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from toolkit.providers import registry

    created = (datetime.now(UTC) - timedelta(hours=2)).replace(microsecond=0)

    class Driver:
        name = "tencentcloud"

        def status(self, spec: Any) -> dict[str, object]:
            return {"exists": True, "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "expires_at": None}

    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(registry, "get_driver", lambda provider, backend_url=None: Driver())
    assert main(["cost", "--json", str(spec_path)]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, json.loads((REPO / "docs" / "schemas" / "cost.json").read_text()))
    assert (document["spent"]["hours"], document["spent"]["amount"]) == (2.0, 114.56)
    assert (document["projected"], document["remaining"]) == (572.8, 458.24)
    assert document["expires_at"] == (created + timedelta(hours=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_an_unreadable_spec_exits_2_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "no-such-spec.yaml"]) == 2
    assert "no-such-spec.yaml: no such file or directory" in capsys.readouterr().err


def _orphan(region: str, instance_type: str) -> Any:
    from toolkit.reap.classify import Cluster
    from toolkit.reap.cloud import CloudInstance

    created = datetime(2026, 6, 1, tzinfo=UTC)
    instance = CloudInstance("tencentcloud", region, "ins-1", "n", instance_type, created)
    return Cluster(name="lost", provider="tencentcloud", region=region, cluster_id=None, owner=None,
                   status="orphaned", created_at=created, expires_at=None, expired=None, state=None,
                   instances=[instance])


def test_reap_prices_an_orphan_only_with_a_figure_for_its_region_and_names_the_kind() -> None:
    from toolkit.reap.cost import cluster_cost

    now = datetime(2026, 6, 1, 10, tzinfo=UTC)
    # GN7.2XLARGE32: a third-party pull for ap-guangzhou (8.73 CNY/h): priced there, not in ap-shanghai.
    there = cluster_cost(_orphan("ap-guangzhou", "GN7.2XLARGE32"), now)
    assert (there.per_hour, there.amount) == (8.73, 87.3)
    assert "(third-party API pull)" in there.basis
    elsewhere = cluster_cost(_orphan("ap-shanghai", "GN7.2XLARGE32"), now)
    assert (elsewhere.per_hour, elsewhere.basis) == (
        None, "unknown: the catalog has no price for GN7.2XLARGE32 in ap-shanghai")
