"""Prices that cannot be true never reach the cache or the plan; a cloud answer that is not the API's is a
clean refusal, never an internal error; one failing region never stops the others (issue 20, items 8 and 9).

The clouds are the fakes of tests/fake_cloud on loopback; the cache files are written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud.alibaba import FakeAlibabaCloud, Offer, serve
from tests.fake_cloud.alibaba import Fault as AliFault
from tests.fake_cloud.tencent import FakeTencentCloud
from tests.fake_cloud.tencent import Fault as TcFault
from tests.fake_cloud.tencent import serve as serve_tencent
from toolkit.cli import main
from toolkit.errors import EXIT_PROVIDER, EXIT_USAGE
from toolkit.prices.cache import load_cache
from toolkit.providers import cloud_api

pytestmark = pytest.mark.fake_cloud

REPO = Path(__file__).resolve().parents[2]
KEY_ID, SECRET = "LTAI5tGpuctlFakeKey0001", "gpuctlFakeAlibabaSecret000000001"
TC_ID, TC_KEY = "AKIDgpuctlTEST0000000000000000000001", "gpuctlFakeSecretKey0000000000000001"
REGION, ZONE, ITYPE = "cn-wulanchabu", "cn-wulanchabu-c", "ecs.ebmgn7ex.32xlarge"
PLAN = "examples/alicloud-erdma-2x8.yaml"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
                 "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_SECURITY_TOKEN",
                 "TENCENTCLOUD_SECURITY_TOKEN", "GPUCTL_CNY_PER_USD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", KEY_ID)
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", SECRET)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", TC_ID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", TC_KEY)
    monkeypatch.chdir(REPO)
    # Short bounds for the tests only: two tries, no backoff to speak of.
    monkeypatch.setattr(cloud_api, "LIMITS", cloud_api.Limits(
        timeout_s=2.0, retry=cloud_api.RetryPolicy(tries=2, base_s=0.0, cap_s=0.0), deadline_s=20.0))


@pytest.fixture
def ali(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAlibabaCloud]:
    cloud = FakeAlibabaCloud(keys={KEY_ID: SECRET}, offers=[
        Offer(REGION, ITYPE, pay_as_you_go=120.0, discount=12.0, disk_per_gib_hour={"cloud_essd": 0.001}),
        Offer("cn-beijing", ITYPE, pay_as_you_go=100.0, disk_per_gib_hour={"cloud_essd": 0.001}),
    ])
    with serve(cloud) as url:
        monkeypatch.setenv("GPUCTL_ALICLOUD_ENDPOINT", url)
        yield cloud


@pytest.fixture
def tc(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTencentCloud]:
    cloud = FakeTencentCloud(keys={TC_ID: TC_KEY}, offers=[
        {"Zone": "ap-shanghai-5", "InstanceType": "HCCG5v.24XLARGE384", "InstanceChargeType": "POSTPAID_BY_HOUR",
         "Status": "SELL",
         "Price": {"UnitPrice": 80.0, "UnitPriceDiscount": 72.0, "ChargeUnit": "HOUR"}}])
    with serve_tencent(cloud) as url:
        monkeypatch.setenv("GPUCTL_TENCENTCLOUD_ENDPOINT", url)
        yield cloud


def refresh(capsys: pytest.CaptureFixture[str], provider: str = "alicloud", region: str = REGION,
            itype: str = ITYPE) -> tuple[int, dict[str, Any], str]:
    code = main(["prices", "refresh", "--json", "--provider", provider, "--region", region, "--instance-type", itype])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.startswith("{") else {}, err


def trade_price(value: Any) -> Any:
    def reshape(answer: dict[str, Any]) -> dict[str, Any]:
        for detail in answer["PriceInfo"]["Price"]["DetailInfos"]["DetailInfo"]:
            detail["TradePrice"] = value
        answer["PriceInfo"]["Price"]["TradePrice"] = value
        return answer
    return reshape


# --- prices from the cloud --------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "why"), [
    ("NaN", "value: Value error, nan is not a finite price"),
    (-3.5, "value: Value error, -3.5 is negative; no price is"),
    (1e308, "value: Value error, 1e+308 per hour is more than any instance costs (at most 100,000)"),
    ("Infinity", "value: Value error, inf is not a finite price"),
])
def test_a_price_that_cannot_be_true_is_not_priced_and_never_cached(
        value: Any, why: str, ali: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str]) -> None:
    ali.faults.append(AliFault("DescribePrice", reshape=trade_price(value), times=1))
    code, document, err = refresh(capsys)
    assert (code, err) == (0, "")
    [row] = document["not_priced"]
    assert row["instance_type"] == ITYPE
    assert row["reason"].startswith(f"alicloud {REGION} {ITYPE} pay_as_you_go: the API answered a price gpuctl "
                                    f"refuses: {why}")
    assert document["entries"] == []
    assert load_cache().entries == []


def test_an_alibaba_answer_without_a_trade_price_is_not_priced(
        ali: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str]) -> None:
    ali.faults.append(AliFault("DescribePrice", reshape=lambda answer: {"PriceInfo": {"Price": {"Currency": "CNY"}}}))
    code, document, _err = refresh(capsys)
    assert code == 0
    assert [r["reason"] for r in document["not_priced"]] == [
        f"{ITYPE}: DescribePrice answered without a TradePrice (PriceInfo.Price)"]


@pytest.mark.parametrize("value", ["NaN", -1, 1e308, 10**30])
def test_a_tencent_offer_with_an_impossible_price_is_named_not_kept(
        value: Any, tc: FakeTencentCloud, capsys: pytest.CaptureFixture[str]) -> None:
    tc.offers[0]["Price"] = {"UnitPrice": value, "UnitPriceDiscount": value, "ChargeUnit": "HOUR"}
    code, document, _err = refresh(capsys, "tencentcloud", "ap-shanghai", "HCCG5v.24XLARGE384")
    assert code == 0
    [row] = document["not_priced"]
    assert row["reason"].startswith("tencentcloud ap-shanghai ap-shanghai-5 HCCG5v.24XLARGE384 pay_as_you_go: the API "
                                    "answered a price gpuctl refuses: value: Value error, ")
    assert load_cache().entries == []


@pytest.mark.parametrize("body", [b"null", b"", b"{}", b"not json", b'{"Response": {"Error": "x"}}'])
def test_a_tencent_body_that_is_not_the_apis_is_a_clean_refusal(
        body: bytes, tc: FakeTencentCloud, capsys: pytest.CaptureFixture[str]) -> None:
    tc.faults.append(TcFault("DescribeZoneInstanceConfigInfos", body=body, times=100))
    code, document, err = refresh(capsys, "tencentcloud", "ap-shanghai", "HCCG5v.24XLARGE384")
    assert code == EXIT_PROVIDER
    [gap] = document["not_refreshed"]
    assert (gap["provider"], gap["region"]) == ("tencentcloud", "ap-shanghai")
    assert gap["reason"].startswith("Tencent Cloud DescribeZoneInstanceConfigInfos in ap-shanghai: the answer was "
                                    "not the API's: ")
    assert "internal error" not in err


def test_one_failing_region_is_named_and_the_others_are_written(
        ali: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str]) -> None:
    from toolkit.prices.cache import PriceCache, PriceEntry, save_cache

    old = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    save_cache(PriceCache(entries=[
        PriceEntry(provider="alicloud", region=region, zone=None, instance_type=ITYPE, billing="pay_as_you_go",
                   currency="CNY", value=1.0, read_at=old, source="live: Alibaba DescribePrice")
        for region in ("cn-beijing", REGION)]))
    # cn-wulanchabu refuses the system disk gpuctl prices with the instance: an error of that region only.
    ali.offers[0] = Offer(REGION, ITYPE, pay_as_you_go=120.0, disk_per_gib_hour={})
    code = main(["prices", "refresh", "--json", "--instance-type", ITYPE])
    out, err = capsys.readouterr()
    assert code == EXIT_PROVIDER
    document = json.loads(out)
    assert [(g["provider"], g["region"]) for g in document["not_refreshed"]] == [("alicloud", REGION)]
    assert "InvalidSystemDiskCategory.ValueNotSupported" in document["not_refreshed"][0]["reason"]
    assert "1 region(s) could not be read" in err
    cached = {e.region: e for e in load_cache().entries}
    assert cached["cn-beijing"].value == 100.0  # read now
    assert (cached[REGION].value, cached[REGION].read_at) == (1.0, old)  # kept as it was


# --- the cache file ---------------------------------------------------------------------------------


def cache_with(**changes: Any) -> str:
    entry = {"provider": "alicloud", "region": REGION, "zone": None, "instance_type": ITYPE,
             "billing": "pay_as_you_go", "currency": "CNY", "value": 108.0, "read_at": "2026-12-01T10:00:00Z",
             "source": "live: Alibaba DescribePrice"}
    return json.dumps({"version": 1, "entries": [{**entry, **changes}]})


@pytest.mark.parametrize(("text", "why"), [
    (cache_with(value=float("nan")), "entries[0] (alicloud cn-wulanchabu ecs.ebmgn7ex.32xlarge pay_as_you_go).value: "
                                     "Value error, nan is not a finite price"),
    (cache_with(value=float("inf")), "value: Value error, inf is not a finite price"),
    (cache_with(value=-1), "value: Value error, -1 is negative; no price is"),
    (cache_with(value=1e308), "value: Value error, 1e+308 per hour is more than any instance costs"),
    (cache_with(value=10**400), "value: Value error, inf is not a finite price"),
    (cache_with(list_value=float("nan")), "list_value: Value error, nan is not a finite price"),
    (cache_with(value="108"), "value: Input should be a valid number"),
    (cache_with(read_at=1764583200), "read_at: Input should be a valid datetime"),
    (cache_with(read_at="2026-12-01T10:00:00"), "read_at: Input should have timezone info"),
    (cache_with(read_at="9999-12-31T23:59:59-14:00"), "read_at: Value error, 9999-12-31T23:59:59-14:00 is outside "
                                                      "2000-2200, not a time gpuctl or a cloud wrote"),
    (cache_with(history=[{"at": "2026-12-01T10:00:00Z", "value": -5}]), "history[0].value: Value error, -5 is "
                                                                        "negative"),
    (cache_with(interruption_average_percent=1e308), "interruption_average_percent: Value error, 1e+308 is not a "
                                                     "percentage in [0, 100]"),
    (json.dumps({"version": 10**40, "entries": []}), "version: Input should be less than or equal to 1000000"),
    ('{"entries": ' + "[" * 50_000 + "]" * 50_000 + "}", "the file: Invalid JSON: recursion limit exceeded"),
    (json.dumps({"entries": "many"}), "entries: Input should be a valid array"),
])
def test_a_cache_with_what_no_price_is_is_refused_naming_the_entry(
        text: str, why: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cache = tmp_path / "home" / "prices.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(text)
    assert main(["plan", PLAN]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"gpuctl plan: error: the price cache {cache} is damaged: ")
    assert why in err
    assert f"rm {cache}" in err


@pytest.mark.parametrize("text", ['{"cny_per_usd": 1e308, "as_of": "2026-12-01", "source": "x"}',
                                  '{"cny_per_usd": 7.1, "as_of": ' + "[" * 20_000 + "]" * 20_000 + ', "source": "x"}'])
def test_an_exchange_rate_file_that_cannot_be_true_is_refused(
        text: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "home" / "exchange_rate.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert main(["plan", PLAN]) == EXIT_USAGE
    assert f"the exchange rate file {path} is not valid" in capsys.readouterr().err


def test_a_cached_region_that_is_no_region_id_is_refused_before_any_call(
        ali: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cache = tmp_path / "home" / "prices.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(cache_with(region="x.attacker.example/"))
    assert main(["prices", "refresh"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "entries[0] (alicloud x.attacker.example/ ecs.ebmgn7ex.32xlarge pay_as_you_go).region: String should " \
        "match pattern" in err
    assert ali.calls == []
    cache.unlink()
    assert main(["prices", "refresh", "--provider", "alicloud", "--region", "cn-beijing/"]) == EXIT_USAGE
    assert "--region 'cn-beijing/' is not a region id" in capsys.readouterr().err
