"""Every cloud example is priced: `gpuctl prices refresh` against the fake APIs, then `plan --json`.

For each example in examples/ that runs on a cloud (the lab costs nothing), the fake Alibaba or
Tencent API on loopback sells the example's instance types in its region and zone; the refresh
fills the price cache through the real SDKs, and the plan must then carry, for every pool, a
number per node and per pool hour, a live price source and the date it was read, with USD beside
CNY at the plan's dated exchange rate. The fake prices are round, obviously made-up numbers that
live only here: they say nothing about what the clouds charge.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud.alibaba import FakeAlibabaCloud, Offer
from tests.fake_cloud.alibaba import serve as serve_alibaba
from tests.fake_cloud.tencent import FakeTencentCloud
from tests.fake_cloud.tencent import serve as serve_tencent
from tests.prices.cloud_env import isolate
from toolkit.cli import main
from toolkit.prices.currency import DEFAULT_RATE, ENV
from toolkit.providers.alicloud.sdk import ENDPOINT_ENV as ALIBABA_ENDPOINT_ENV
from toolkit.providers.tencentcloud.sdk import ENDPOINT_ENV as TENCENT_ENDPOINT_ENV
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.fake_cloud

REPO = Path(__file__).resolve().parents[2]
KEY_ID, SECRET = "LTAI5tGpuctlFakeKey0001", "gpuctlFakeAlibabaSecret000000001"
TC_ID, TC_KEY = "AKIDgpuctlTEST0000000000000000000001", "gpuctlFakeSecretKey0000000000000001"
# Fake prices, CNY per instance-hour: round and plainly made up.
FAKE_PAYG, FAKE_SPOT = 100.0, 2.0
CLOUD_EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.yaml")
                        if load_spec(p).provider in ("alicloud", "tencentcloud"))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path, ENV)


def _pools(example: str) -> tuple[str, str, str, list[str]]:
    spec = load_spec(REPO / "examples" / example)
    assert spec.region is not None
    assert spec.zone is not None
    return spec.provider, spec.region, spec.zone, sorted({p.instance_type for p in spec.node_pools})


def _tencent_offer(zone: str, instance_type: str, charge: str, price: float) -> dict[str, Any]:
    return {"Zone": zone, "InstanceType": instance_type, "InstanceChargeType": charge, "Status": "SELL",
            "InstanceFamily": instance_type.split(".")[0],
            "Price": {"UnitPrice": price, "UnitPriceDiscount": price, "ChargeUnit": "HOUR", "Discount": 100.0}}


@pytest.fixture
def fake_clouds(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The example's cloud on loopback, selling its instance types in its region and zone."""
    provider, region, zone, types = _pools(request.param)
    with ExitStack() as stack:
        if provider == "alicloud":
            recent = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            alibaba = FakeAlibabaCloud(keys={KEY_ID: SECRET}, offers=[
                Offer(region, name, pay_as_you_go=FAKE_PAYG, disk_per_gib_hour={"cloud_essd": 0.001},
                      spot={zone: [(recent, FAKE_SPOT)]}) for name in types])
            monkeypatch.setenv(ALIBABA_ENDPOINT_ENV, stack.enter_context(serve_alibaba(alibaba)))
            monkeypatch.setenv("ALICLOUD_ACCESS_KEY", KEY_ID)
            monkeypatch.setenv("ALICLOUD_SECRET_KEY", SECRET)
        else:
            tencent = FakeTencentCloud(keys={TC_ID: TC_KEY}, offers=[
                _tencent_offer(zone, name, charge, price) for name in types
                for charge, price in (("POSTPAID_BY_HOUR", FAKE_PAYG), ("SPOTPAID", FAKE_SPOT))])
            monkeypatch.setenv(TENCENT_ENDPOINT_ENV, stack.enter_context(serve_tencent(tencent)))
            monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", TC_ID)
            monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", TC_KEY)
        yield


def test_there_are_cloud_examples_of_both_clouds() -> None:
    assert {_pools(e)[0] for e in CLOUD_EXAMPLES} == {"alicloud", "tencentcloud"}
    assert "local-lab.yaml" not in CLOUD_EXAMPLES


@pytest.mark.parametrize("fake_clouds", CLOUD_EXAMPLES, indirect=True)
def test_every_cloud_example_plans_a_live_price_for_every_pool(
    fake_clouds: None, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str],
) -> None:
    example = request.node.callspec.params["fake_clouds"]
    provider, region, _, _ = _pools(example)
    assert main(["prices", "refresh", "--provider", provider, "--region", region]) == 0
    capsys.readouterr()
    assert main(["plan", "--json", f"examples/{example}"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    spec = load_spec(REPO / "examples" / example)
    today = datetime.now(UTC).date().isoformat()
    assert [p["pool"] for p in cost["pools"]] == [p.name for p in spec.node_pools]
    for pool, node_pool in zip(cost["pools"], spec.node_pools, strict=True):
        expected = FAKE_SPOT if node_pool.billing.mode == "spot" else FAKE_PAYG  # every ceiling is above 2.0
        assert pool["per_node_per_hour"] == expected, pool["pool"]
        assert pool["per_hour"] == expected * node_pool.count
        assert pool["pay_as_you_go_per_node_per_hour"] == FAKE_PAYG
        assert pool["price_source"].startswith("live, read "), pool["price_source"]
        assert pool["price_read"] == today
        assert pool["per_hour_usd"] == round(expected * node_pool.count / DEFAULT_RATE.cny_per_usd, 2)
    assert cost["unknown_prices"] == []
    assert isinstance(cost["per_hour"], float)
    assert cost["currency"] == "CNY"
    assert cost["exchange_rate"] == {"cny_per_usd": 7.2734, "as_of": "2025-02 (monthly average)",
                                     "source": DEFAULT_RATE.source}
    assert cost["per_hour_usd"] == round(cost["per_hour"] / 7.2734, 2)
