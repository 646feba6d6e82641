"""Spot pools in the plan: the saving against pay-as-you-go and the interruption risk the cloud reports.

No cloud here: cache entries are written as `gpuctl prices refresh` writes them (the fake-API side
is in test_refresh.py), and `plan` reads them.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from toolkit.cli import main
from toolkit.prices.cache import PriceCache, PriceEntry, save_cache
from toolkit.prices.spot import Risk, Saving, risk, saving

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TENCENT_NO_RATE = ("Tencent publishes no interruption rate: the CVM API (2017-03-12) reports none, and its spot "
                   "overview says spot instances are reclaimed at random when supply runs short (checked 2026-12-01: "
                   "https://www.tencentcloud.com/document/product/213/17816)")


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GPUCTL_CNY_PER_USD", raising=False)
    monkeypatch.chdir(REPO)


def spot_entry(read_at: datetime = NOW, **more: Any) -> PriceEntry:
    values: dict[str, Any] = {
        "provider": "alicloud", "region": "cn-hangzhou", "zone": "cn-hangzhou-i",
        "instance_type": "ecs.gn7i-c8g1.2xlarge", "billing": "spot", "currency": "CNY", "value": 2.5,
        "read_at": read_at,
        "source": "live: Alibaba DescribePrice SpotAsPriceGo + DescribeSpotPriceHistory",
        "interruption_rate": "3-5%", "interruption_average_percent": 4.2, "spot_average_percent": 18,
        "interruption_source": "live: Alibaba DescribeSpotAdvice, last 30 days",
    }
    return PriceEntry(**(values | more))


def test_saving_is_pay_as_you_go_minus_the_spot_price_now() -> None:
    assert saving(31.25, 108.0) == Saving(per_node_per_hour=76.75, percent=71.1)
    assert saving(2.5, 10.0) == Saving(per_node_per_hour=7.5, percent=75.0)
    assert saving(12.0, 10.0) == Saving(per_node_per_hour=-2.0, percent=-20.0)  # said as it is, never hidden


@pytest.mark.parametrize(("spot_now", "payg"), [(None, 108.0), (31.25, None), (None, None), (1.0, 0.0)])
def test_no_saving_without_both_prices(spot_now: float | None, payg: float | None) -> None:
    assert saving(spot_now, payg) is None


def test_risk_of_an_alibaba_zone_is_the_cached_band_with_source_and_read_time() -> None:
    assert risk("alicloud", spot_entry(), NOW) == Risk(
        rate="3-5%",
        source="average 4.2%, average spot price 18% of pay-as-you-go; "
               "live, read 2026-12-01 12:00 UTC (Alibaba DescribeSpotAdvice, last 30 days)",
        read=date(2026, 12, 1),
    )


def test_an_old_risk_is_marked_old() -> None:
    found = risk("alicloud", spot_entry(read_at=NOW - timedelta(days=10)), NOW)
    assert found.source == ("average 4.2%, average spot price 18% of pay-as-you-go; OLD (10 days, more than 7): "
                            "live, read 2026-11-21 12:00 UTC (Alibaba DescribeSpotAdvice, last 30 days)")


def test_no_rate_when_the_cloud_gave_none_or_was_not_asked() -> None:
    asked = spot_entry(interruption_rate=None, interruption_average_percent=None, spot_average_percent=None)
    assert risk("alicloud", asked, NOW) == Risk(
        rate=None,
        source="none reported for ecs.gn7i-c8g1.2xlarge in cn-hangzhou-i: "
               "live, read 2026-12-01 12:00 UTC (Alibaba DescribeSpotAdvice, last 30 days)",
        read=date(2026, 12, 1),
    )
    not_asked = spot_entry(interruption_rate=None, interruption_source=None)  # a cache from before the advice
    assert risk("alicloud", not_asked, NOW) == Risk(rate=None, source=None, read=None)
    assert risk("alicloud", None, None) == Risk(rate=None, source=None, read=None)


def test_tencent_says_it_publishes_no_rate_whatever_the_cache_holds() -> None:
    assert risk("tencentcloud", None, None) == Risk(rate=None, source=TENCENT_NO_RATE, read=date(2026, 12, 1))
    tencent = spot_entry(provider="tencentcloud", interruption_rate=None, interruption_source=None)
    assert risk("tencentcloud", tencent, NOW).rate is None


def test_plan_of_a_tencent_spot_pool_with_live_prices(capsys: pytest.CaptureFixture[str]) -> None:
    # examples/tencentcloud-gt4-spot.yaml: 2 x GT4.41XLARGE948 in ap-shanghai-4, ceiling 120 CNY/h.
    common: dict[str, Any] = {"provider": "tencentcloud", "region": "ap-shanghai", "zone": "ap-shanghai-4",
                              "instance_type": "GT4.41XLARGE948", "currency": "CNY", "read_at": datetime.now(UTC),
                              "source": "live: Tencent DescribeZoneInstanceConfigInfos"}
    save_cache(PriceCache(entries=[PriceEntry(billing="pay_as_you_go", value=200.0, **common),
                                   PriceEntry(billing="spot", value=50.0, **common)]))
    assert main(["plan", "--json", "examples/tencentcloud-gt4-spot.yaml"]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert (pool["per_node_per_hour"], pool["pay_as_you_go_per_node_per_hour"]) == (50.0, 200.0)
    # 200 - 50 = 150 per node-hour (75%), 300 for 2 nodes, 41.25 USD at the default 7.2734.
    assert (pool["saving_per_node_per_hour"], pool["saving_percent"], pool["saving_per_hour"],
            pool["saving_per_hour_usd"]) == (150.0, 75.0, 300.0, 41.25)
    assert (pool["interruption_rate"], pool["interruption_source"], pool["interruption_read"]) == \
        (None, TENCENT_NO_RATE, "2026-12-01")
    assert main(["plan", "examples/tencentcloud-gt4-spot.yaml"]) == 0
    text = capsys.readouterr().out
    assert ("    saving against pay-as-you-go: 150.00 CNY/h per node (75%), 300.00 CNY/h ($41.25) for the pool "
            "at the spot price now\n") in text
    assert f"    interruption risk: {TENCENT_NO_RATE}\n" in text


def test_plan_without_a_cache_gives_no_saving_and_says_how_to_read_the_risk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # examples/single-gpu-lora.yaml: Alibaba spot with a 5 CNY/h ceiling, a third-party catalog figure only.
    assert main(["plan", "--json", "examples/single-gpu-lora.yaml"]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert [pool[k] for k in ("saving_per_node_per_hour", "saving_per_hour", "saving_percent", "saving_per_hour_usd",
                              "interruption_rate", "interruption_source", "interruption_read")] == [None] * 7
    assert main(["plan", "examples/single-gpu-lora.yaml"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ("    saving against pay-as-you-go: unknown until both the spot price now and the pay-as-you-go price "
            "are known") in lines
    risk_line = next(line for line in lines if "interruption risk" in line)
    assert risk_line.startswith("    interruption risk: not read yet; the cloud reports it per zone: ")
    assert risk_line.endswith(" prices refresh --provider alicloud --region cn-hangzhou")


def test_plan_of_an_alibaba_spot_pool_with_a_cached_band(capsys: pytest.CaptureFixture[str]) -> None:
    read = datetime.now(UTC).replace(microsecond=0)
    save_cache(PriceCache(entries=[spot_entry(read_at=read)]))
    assert main(["plan", "--json", "examples/single-gpu-lora.yaml"]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert pool["per_node_per_hour"] == 2.5  # below the 5.0 ceiling
    # No saving: the catalog's pay-as-you-go figure is a third-party pull, not to be set against a live price.
    assert pool["pay_as_you_go_per_node_per_hour"] == 9.6166
    assert pool["saving_per_node_per_hour"] is None
    assert pool["interruption_rate"] == "3-5%"
    assert pool["interruption_source"] == ("average 4.2%, average spot price 18% of pay-as-you-go; live, read "
                                           f"{read:%Y-%m-%d %H:%M} UTC (Alibaba DescribeSpotAdvice, last 30 days)")


def test_pay_as_you_go_and_lab_pools_carry_no_spot_fields(capsys: pytest.CaptureFixture[str]) -> None:
    for example in ("tencentcloud-hcc-2x8.yaml", "local-lab.yaml"):
        assert main(["plan", "--json", f"examples/{example}"]) == 0
        for pool in json.loads(capsys.readouterr().out)["cost"]["pools"]:
            assert (pool["interruption_source"], pool["saving_per_hour"]) == (None, None)
        assert main(["plan", f"examples/{example}"]) == 0
        assert "interruption risk" not in capsys.readouterr().out


def test_a_tencent_spot_pool_shows_both_of_tencents_disagreeing_discount_statements(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Written out from the pages (read 2026-12-02): intlcloud-documents @02ec31c 竞价实例_intl_en.md line 14,
    # "Spot instances are sold at a discount of up to 95% off the prices of pay-as-you-go instances."; and
    # qcloud-documents @83699a9 竞价实例.md line 8 "按同规格按量计费实例20%的价格出售", line 15 "最低1折",
    # line 18 "当前阶段，折扣比例将固定为2折".
    assert main(["plan", "--json", "examples/tencentcloud-gt4-spot.yaml"]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    stated = pool["spot_stated_discounts"]
    assert len(stated) == 3
    assert stated[0].startswith("up to 95% off pay-as-you-go (Tencent's spot page, international site, "
                                "changed 2023-06-30: https://github.com/tencentyun/intlcloud-documents/blob/"
                                "02ec31c2626e18091982c1934bd4aded84cf5043/")
    assert stated[1].startswith('sold at 20% of the pay-as-you-go price (a fixed 80% off "at the current stage"; '
                                "as low as 10%) (Tencent's spot page, China site, a stored version of unknown date: "
                                "https://github.com/tencentyun/qcloud-documents/blob/"
                                "83699a95a518d1dd5b49370a8d390aad864cecc2/")
    assert stated[2] == ("the cloud's 2 pages above state different figures; none is a price: the spot price now "
                         "is what `prices refresh` reads from the cloud's price API")
    assert main(["plan", "examples/tencentcloud-gt4-spot.yaml"]) == 0
    text = capsys.readouterr().out
    assert "the cloud states: up to 95% off pay-as-you-go" in text
    assert "the cloud states: sold at 20% of the pay-as-you-go price" in text


def test_an_alibaba_spot_pool_shows_its_one_statement_and_a_pay_as_you_go_pool_none(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--json", "examples/single-gpu-lora.yaml"]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert pool["spot_stated_discounts"] == [
        "discounts of up to 90% of pay-as-you-go prices (Alibaba's billing page for instance types, changed "
        "2021-03-09: https://github.com/AlibabaCloudDocs/ecs/blob/322eaab82e866a494eeaddb0de02bab1978692d1/"
        "intl.en-US/Pricing/Billing%20items/Instance%20types.md line 43)"]
    assert main(["plan", "--json", "examples/tencentcloud-gt4-storage.yaml"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"]["pools"][0]["spot_stated_discounts"] == []
