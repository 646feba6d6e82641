"""Live prices: `gpuctl prices refresh` against the fake Alibaba and Tencent APIs on loopback, the cache, and plan.

The real SDKs sign and send every request; the fakes (tests/fake_cloud/) verify the signatures
(ACS3-HMAC-SHA256, TC3-HMAC-SHA256) and answer with the APIs' shapes and error codes.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.fake_cloud.alibaba import FakeAlibabaCloud, Offer, serve
from tests.fake_cloud.alibaba import Fault as AliFault
from tests.fake_cloud.tencent import FakeTencentCloud
from tests.fake_cloud.tencent import serve as serve_tencent
from tests.prices.cloud_env import isolate
from toolkit.cli import main
from toolkit.errors import EXIT_MISSING_TOOL, EXIT_PROVIDER, EXIT_USAGE, UsageError
from toolkit.prices.cache import PriceCache, PriceEntry, SpotPoint, load_cache, save_cache
from toolkit.providers.alicloud.sdk import ENDPOINT_ENV, ApiError, RetryPolicy, connect, override_endpoint
from toolkit.providers.tencentcloud import prices as tencent_prices
from toolkit.providers.tencentcloud import sdk as tencent_sdk

pytestmark = pytest.mark.fake_cloud

REPO = Path(__file__).resolve().parents[2]
KEY_ID = "LTAI5tGpuctlFakeKey0001"
SECRET = "gpuctlFakeAlibabaSecret000000001"
TC_ID = "AKIDgpuctlTEST0000000000000000000001"
TC_KEY = "gpuctlFakeSecretKey0000000000000001"
REGION, ZONE = "cn-wulanchabu", "cn-wulanchabu-c"
ITYPE = "ecs.ebmgn7ex.32xlarge"  # examples/alicloud-erdma-2x8.yaml
SPOT_POINTS = [("2026-12-01T08:00:00Z", 30.5), ("2026-12-01T09:00:00Z", 31.25)]
OTHER_ZONE = "cn-wulanchabu-a"  # sells the type as spot, but DescribeSpotAdvice leaves it out


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def cloud() -> FakeAlibabaCloud:
    return FakeAlibabaCloud(keys={KEY_ID: SECRET}, offers=[
        Offer(REGION, ITYPE, pay_as_you_go=120.0, discount=12.0, disk_per_gib_hour={"cloud_essd": 0.001},
              spot={ZONE: list(SPOT_POINTS)}, advice={ZONE: ("0-3%", 1.5, 26)}),
    ])


@pytest.fixture
def endpoint(cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with serve(cloud) as url:
        monkeypatch.setenv(ENDPOINT_ENV, url)
        yield url


def login(monkeypatch: pytest.MonkeyPatch, key: str = KEY_ID, secret: str = SECRET) -> None:
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", key)
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", secret)


def refresh(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, str]:
    code = main(["prices", "refresh", "--provider", "alicloud", "--region", REGION, *more])
    out, err = capsys.readouterr()
    return code, out, err


def home_files(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "home").rglob("*") if p.is_file()]


# --- Alibaba: refresh writes the cache --------------------------------------------------------


def test_refresh_reads_alibaba_prices_and_writes_the_dated_cache(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    login(monkeypatch)
    code, out, err = refresh(capsys, "--instance-type", ITYPE, "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    jsonschema.validate(document, json.loads((REPO / "docs/schemas/prices.json").read_text()))
    cache = load_cache()
    payg, spot = cache.entries  # sorted by key: pay_as_you_go (zone null) before spot
    assert (payg.provider, payg.region, payg.zone, payg.instance_type, payg.billing) == \
        ("alicloud", REGION, None, ITYPE, "pay_as_you_go")
    assert (payg.currency, payg.value, payg.list_value) == ("CNY", 108.0, 120.0)  # TradePrice of instanceType
    assert (payg.system_disk, payg.system_disk_per_hour) == ("cloud_essd 200 GiB", 0.2)
    assert payg.source == "live: Alibaba DescribePrice"
    assert (spot.zone, spot.billing, spot.value) == (ZONE, "spot", 31.25)  # the latest point is the price now
    assert [(p.at, p.value) for p in spot.history] == [
        (datetime(2026, 12, 1, 8, tzinfo=UTC), 30.5), (datetime(2026, 12, 1, 9, tzinfo=UTC), 31.25)]
    assert spot.source == "live: Alibaba DescribePrice SpotAsPriceGo + DescribeSpotPriceHistory"
    assert (spot.interruption_rate, spot.interruption_average_percent, spot.spot_average_percent) == \
        ("0-3%", 1.5, 26.0)
    assert spot.interruption_source == "live: Alibaba DescribeSpotAdvice, last 30 days"
    assert (payg.interruption_rate, payg.interruption_source) == (None, None)  # not a spot price
    assert abs(payg.read_at - datetime.now(UTC)) < timedelta(minutes=1)
    # What the SDK sent, as the API reference asks for it.
    price_calls = cloud.actions("DescribePrice")
    assert price_calls[0].params == {"RegionId": REGION, "ResourceType": "instance", "InstanceType": ITYPE,
                                     "PriceUnit": "Hour", "SpotStrategy": "NoSpot", "SystemDisk.Category": "cloud_essd",
                                     "SystemDisk.Size": "200"}
    assert price_calls[1].params["SpotStrategy"] == "SpotAsPriceGo"
    assert price_calls[1].params["ZoneId"] == ZONE
    history = cloud.actions("DescribeSpotPriceHistory")[0].params
    assert (history["NetworkType"], history["InstanceType"]) == ("vpc", ITYPE)
    assert cloud.actions("DescribeSpotAdvice")[0].params == {"RegionId": REGION, "InstanceTypes.1": ITYPE}
    assert [p.name for p in home_files(tmp_path)] == ["prices.json"]  # atomic write leaves no temporary file


def test_refresh_of_the_whole_catalog_lists_unsold_types_without_failing(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    login(monkeypatch)
    code, out, _ = refresh(capsys)
    assert code == 0
    assert "live, read " in out
    assert "(Alibaba DescribePrice)" in out
    not_found = [c for c in cloud.calls if c.answered == "InvalidInstanceType.NotFound"]
    assert len(not_found) == 16  # the 17 alicloud catalog types less the one the fake sells, each asked once
    assert out.count("InvalidInstanceType.NotFound: The specified InstanceType does not exist.") == 16
    assert {e.instance_type for e in load_cache().entries} == {ITYPE}


def test_plan_shows_the_live_price_and_where_it_came_from(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--json", "examples/alicloud-erdma-2x8.yaml"]) == 0
    before = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert before["per_node_per_hour"] is None  # the catalog has no price for it
    login(monkeypatch)
    assert refresh(capsys, "--instance-type", ITYPE)[0] == 0
    assert main(["plan", "--json", "examples/alicloud-erdma-2x8.yaml"]) == 0
    plan = json.loads(capsys.readouterr().out)
    pool = plan["cost"]["pools"][0]
    read = load_cache().entries[0].read_at
    assert pool["per_node_per_hour"] == 108.0
    assert pool["per_hour"] == 216.0  # 2 nodes
    assert pool["price_source"] == f"live, read {read:%Y-%m-%d %H:%M} UTC (Alibaba DescribePrice)"
    assert pool["price_read"] == read.date().isoformat()
    assert pool["price_region"] == REGION
    assert plan["cost"]["per_hour"] == 216.0
    assert plan["cost"]["for_ttl"] == 1728.0  # 8 h
    assert plan["cost"]["unknown_prices"] == []


def test_plan_prices_a_spot_pool_at_the_zone_price_now(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    login(monkeypatch)
    assert refresh(capsys, "--instance-type", ITYPE)[0] == 0
    spec = tmp_path / "spot.yaml"
    spec.write_text((REPO / "examples/alicloud-erdma-2x8.yaml").read_text()
                    .replace("billing: {mode: pay_as_you_go}", "billing: {mode: spot}")
                    .replace("ssh/example_ecdsa.pub", str(REPO / "examples/ssh/example_ecdsa.pub")))
    assert main(["plan", "--json", str(spec)]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert (pool["billing"], pool["per_node_per_hour"], pool["pay_as_you_go_per_node_per_hour"]) == \
        ("spot", 31.25, 108.0)
    assert pool["price_region"] == f"{REGION} {ZONE}"
    assert "(Alibaba DescribePrice SpotAsPriceGo + DescribeSpotPriceHistory)" in pool["price_source"]
    read = load_cache().entries[0].read_at
    # 108.00 - 31.25 = 76.75 per node-hour, 71.1% of 108.00; 2 nodes; USD at the default 7.2734.
    assert (pool["saving_per_node_per_hour"], pool["saving_percent"], pool["saving_per_hour"],
            pool["saving_per_hour_usd"]) == (76.75, 71.1, 153.5, 21.1)
    assert pool["interruption_rate"] == "0-3%"
    assert pool["interruption_source"] == ("average 1.5%, average spot price 26% of pay-as-you-go; "
                                           f"live, read {read:%Y-%m-%d %H:%M} UTC (Alibaba DescribeSpotAdvice, "
                                           "last 30 days)")
    assert pool["interruption_read"] == read.date().isoformat()
    assert main(["plan", str(spec)]) == 0
    text = capsys.readouterr().out
    assert "    saving against pay-as-you-go: 76.75 CNY/h per node (71.1%), 153.50 CNY/h ($21.10) for the pool " \
        "at the spot price now\n" in text
    assert "    interruption risk: 0-3% (average 1.5%, average spot price 26% of pay-as-you-go; live, read " in text


def test_a_spot_zone_without_advice_keeps_its_price_and_says_no_rate_was_reported(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    cloud.offers[0].spot[OTHER_ZONE] = [("2026-12-01T09:00:00Z", 29.0)]
    login(monkeypatch)
    assert refresh(capsys, "--instance-type", ITYPE)[0] == 0
    spots = {e.zone: e for e in load_cache().entries if e.billing == "spot"}
    assert (spots[OTHER_ZONE].value, spots[OTHER_ZONE].interruption_rate) == (29.0, None)
    assert spots[OTHER_ZONE].interruption_source == "live: Alibaba DescribeSpotAdvice, last 30 days"
    assert spots[ZONE].interruption_rate == "0-3%"
    assert len(cloud.actions("DescribeSpotAdvice")) == 1  # one call covers every zone
    spec = tmp_path / "spot-a.yaml"
    spec.write_text((REPO / "examples/alicloud-erdma-2x8.yaml").read_text()
                    .replace("billing: {mode: pay_as_you_go}", "billing: {mode: spot}")
                    .replace(f"zone: {ZONE}", f"zone: {OTHER_ZONE}")
                    .replace("ssh/example_ecdsa.pub", str(REPO / "examples/ssh/example_ecdsa.pub")))
    assert main(["plan", "--json", str(spec)]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert (pool["per_node_per_hour"], pool["saving_per_node_per_hour"], pool["saving_percent"]) == (29.0, 79.0, 73.1)
    assert pool["interruption_rate"] is None
    assert pool["interruption_source"].startswith(f"none reported for {ITYPE} in {OTHER_ZONE}: live, read ")
    assert pool["interruption_source"].endswith(" UTC (Alibaba DescribeSpotAdvice, last 30 days)")


def test_a_type_with_no_spot_zone_asks_for_no_advice(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    cloud.offers[0].spot.clear()
    login(monkeypatch)
    assert refresh(capsys, "--instance-type", ITYPE)[0] == 0
    assert [e.billing for e in load_cache().entries] == ["pay_as_you_go"]
    assert cloud.actions("DescribeSpotAdvice") == []


def test_every_page_of_the_spot_history_is_read_by_its_next_offset(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """DescribeSpotPriceHistory pages by row: Offset in, NextOffset out (the SDK models' fields)."""
    cloud.spot_page_rows = 1
    cloud.offers[0].spot[OTHER_ZONE] = [("2026-12-01T08:30:00Z", 28.0)]
    login(monkeypatch)
    assert refresh(capsys, "--instance-type", ITYPE)[0] == 0
    offsets = [c.params.get("Offset") for c in cloud.actions("DescribeSpotPriceHistory")]
    assert offsets == [None, "1", "2"]  # the first page asks from row 0, the API's default
    spots = {e.zone: [p.value for p in e.history] for e in load_cache().entries if e.billing == "spot"}
    assert spots == {OTHER_ZONE: [28.0], ZONE: [30.5, 31.25]}  # the third row, on the third page, is in


def test_a_spot_history_that_gives_the_same_next_offset_again_is_stopped_and_named(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    def stuck(body: dict[str, object]) -> dict[str, object]:
        return {**body, "NextOffset": 1}  # page 2 says "next: row 1" again: an endless list

    cloud.spot_page_rows = 1
    cloud.faults.append(AliFault("DescribeSpotPriceHistory", times=100, reshape=stuck))
    login(monkeypatch)
    code, out, err = refresh(capsys, "--instance-type", ITYPE)
    assert code == EXIT_PROVIDER
    assert "could not be read: alicloud cn-wulanchabu" in err
    assert "DescribeSpotPriceHistory in cn-wulanchabu: the API gave the same next-page token again; stopped after " \
        "2 page(s) and 2 item(s), so the list was not finished" in out
    assert len(cloud.actions("DescribeSpotPriceHistory")) == 2


def test_a_ram_user_without_describe_spot_advice_is_told_which_action_to_allow(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    login(monkeypatch)
    cloud.denied[KEY_ID] = {"DescribeSpotAdvice"}
    exit_code, out, err = refresh(capsys, "--instance-type", ITYPE)
    assert (exit_code, out) == (EXIT_PROVIDER, "")
    assert "Forbidden.RAM" in err
    assert "ecs:DescribeSpotAdvice" in err
    assert home_files(tmp_path) == []  # nothing half-written


# --- Alibaba: retries and errors ---------------------------------------------------------------


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def api_env(endpoint: str, secret: str = SECRET) -> dict[str, str]:
    return {"ALICLOUD_ACCESS_KEY": KEY_ID, "ALICLOUD_SECRET_KEY": secret, ENDPOINT_ENV: endpoint}


def test_throttling_is_retried_with_backoff_then_answers(endpoint: str, cloud: FakeAlibabaCloud) -> None:
    from toolkit.providers.alicloud.prices import read_prices

    cloud.faults.append(AliFault("DescribePrice", "Throttling", times=2))
    sleeps = Sleeps()
    api = connect(REGION, env=api_env(endpoint), retry=RetryPolicy(tries=4, base_s=0.5, cap_s=4.0), sleep=sleeps)
    entries = read_prices(api, ITYPE, datetime(2026, 12, 1, 10, 2, tzinfo=UTC))
    assert [e.value for e in entries] == [108.0, 31.25]
    assert [c.answered for c in cloud.actions("DescribePrice")][:3] == ["Throttling", "Throttling", "ok"]
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 0.5
    assert 0 <= sleeps[1] <= 1.0


def test_throttling_on_every_try_says_so_with_the_request_id(endpoint: str, cloud: FakeAlibabaCloud) -> None:
    from alibabacloud_ecs20140526 import models

    cloud.faults.append(AliFault("DescribePrice", "Throttling", times=10))
    api = connect(REGION, env=api_env(endpoint), retry=RetryPolicy(tries=3, base_s=0.0), sleep=Sleeps())
    with pytest.raises(ApiError) as caught:
        api.call("DescribePrice", models.DescribePriceRequest(region_id=REGION, instance_type=ITYPE))
    assert caught.value.code == "Throttling"
    assert caught.value.exit_code == EXIT_PROVIDER
    assert "DescribePrice was throttled by Alibaba Cloud (Throttling) on every try after 3 tries [RequestId " \
        in caught.value.message
    assert len(cloud.actions("DescribePrice")) == 3


@pytest.mark.parametrize(("setup", "code", "words"), [
    ("wrong secret", "SignatureDoesNotMatch",
     "the signature does not match: the AccessKey secret does not belong to the AccessKey ID"),
    ("unknown key", "InvalidAccessKeyId.NotFound", "the AccessKey ID is not a valid, enabled Alibaba Cloud key"),
    ("ram denies", "Forbidden.RAM", "the RAM user may not call ecs:DescribePrice"),
])
def test_auth_errors_exit_6_with_code_and_request_id_and_write_nothing(
    setup: str, code: str, words: str, endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    if setup == "wrong secret":
        login(monkeypatch, secret="gpuctlWrongSecret0000000000000009")
    elif setup == "unknown key":
        login(monkeypatch, key="LTAI5tGpuctlUnknownKey09")
    else:
        login(monkeypatch)
        cloud.denied[KEY_ID] = {"DescribePrice"}
    exit_code, out, err = refresh(capsys, "--instance-type", ITYPE)
    assert exit_code == EXIT_PROVIDER
    assert out == ""
    assert err.startswith(f"gpuctl prices: error: Alibaba Cloud refused the credentials ({code}): {words}")
    assert "[RequestId " in err
    assert "ALICLOUD_ACCESS_KEY" in err  # the hint names the variables
    assert len(cloud.actions("DescribePrice")) == 1  # an auth error is not retried
    assert home_files(tmp_path) == []


def test_missing_credentials_exit_7_naming_the_variables(
    endpoint: str, cloud: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str],
) -> None:
    exit_code, _, err = refresh(capsys)
    assert exit_code == EXIT_MISSING_TOOL
    assert err.splitlines()[0] == ("gpuctl prices: error: no Alibaba Cloud credentials in the environment "
                                   "(ALICLOUD_ACCESS_KEY/ALICLOUD_SECRET_KEY, "
                                   "ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET are not set)")
    assert cloud.calls == []


def test_no_secret_in_any_output_or_file(
    endpoint: str, cloud: FakeAlibabaCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    login(monkeypatch)
    texts = [*refresh(capsys, "--instance-type", ITYPE)[1:], *refresh(capsys, "--instance-type", ITYPE, "--json")[1:]]
    login(monkeypatch, secret="gpuctlWrongSecret0000000000000009")
    texts += refresh(capsys, "--instance-type", ITYPE)[1:]
    texts += [p.read_text() for p in home_files(tmp_path)]
    assert cloud.calls[-1].answered == "SignatureDoesNotMatch"
    for text in texts:
        for secret in (SECRET, "gpuctlWrongSecret0000000000000009", KEY_ID):
            assert secret not in text


# --- the fake checks what the SDK sends ----------------------------------------------------------


def test_the_fake_refuses_a_bad_or_missing_signature_with_the_real_shapes(endpoint: str) -> None:
    def post(headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(f"{endpoint}/?RegionId={REGION}", data=b"", method="POST", headers=headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=5) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    status, body = post({"x-acs-action": "DescribePrice"})
    assert (status, body["Code"]) == (400, "IncompleteSignature")
    assert set(body) == {"RequestId", "HostId", "Code", "Message", "Recommend"}
    headers = {"x-acs-action": "DescribePrice", "x-acs-version": "2014-05-26",
               "x-acs-date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "x-acs-signature-nonce": "n1",
               "x-acs-content-sha256": hashlib.sha256(b"").hexdigest(), "host": endpoint.removeprefix("http://")}
    signed = ";".join(sorted(headers))
    headers["Authorization"] = f"ACS3-HMAC-SHA256 Credential={KEY_ID},SignedHeaders={signed},Signature={'0' * 64}"
    status, body = post(headers)
    assert (status, body["Code"]) == (400, "SignatureDoesNotMatch")
    assert body["Message"].startswith("Specified signature does not match our calculation. server string to sign is:")


def test_the_endpoint_override_is_loopback_only_and_refuses_a_proxy() -> None:
    assert override_endpoint({ENDPOINT_ENV: "http://127.0.0.1:8080"}) == "127.0.0.1:8080"
    for bad in ("https://127.0.0.1:8080", "http://ecs.aliyuncs.com:80", "http://127.0.0.1", "http://10.0.0.1:80/x"):
        with pytest.raises(UsageError) as caught:
            override_endpoint({ENDPOINT_ENV: bad})
        assert caught.value.exit_code == EXIT_USAGE
    with pytest.raises(UsageError, match="HTTP_PROXY"):
        override_endpoint({ENDPOINT_ENV: "http://127.0.0.1:8080", "HTTP_PROXY": "http://proxy.example:3128"})


# --- Tencent ----------------------------------------------------------------------------------------


def tencent_offer(zone: str, charge: str, unit: float, discount: float) -> dict[str, Any]:
    return {"Zone": zone, "InstanceType": "HCCG5v.24XLARGE384", "InstanceChargeType": charge, "Status": "SELL",
            "InstanceFamily": "HCCG5v", "Price": {"UnitPrice": unit, "UnitPriceDiscount": discount,
                                                  "ChargeUnit": "HOUR", "Discount": 100.0}}


@pytest.fixture
def tencent(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTencentCloud]:
    cloud = FakeTencentCloud(keys={TC_ID: TC_KEY}, disk_per_gib_hour=0.002, offers=[
        tencent_offer("ap-shanghai-5", "POSTPAID_BY_HOUR", 80.0, 72.0),
        tencent_offer("ap-shanghai-5", "SPOTPAID", 20.0, 16.0),
        tencent_offer("ap-shanghai-8", "POSTPAID_BY_HOUR", 81.0, 81.0),
    ])
    with serve_tencent(cloud) as url:
        monkeypatch.setenv(tencent_sdk.ENDPOINT_ENV, url)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", TC_ID)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", TC_KEY)
        yield cloud


def test_tencent_refresh_keeps_every_zone_price_and_plan_reads_its_zone(
    tencent: FakeTencentCloud, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["prices", "refresh", "--provider", "tencentcloud", "--region", "ap-shanghai",
                 "--instance-type", "HCCG5v.24XLARGE384"]) == 0
    capsys.readouterr()
    entries = [(e.zone, e.billing, e.value, e.list_value, e.source) for e in load_cache().entries]
    assert entries == [
        ("ap-shanghai-5", "pay_as_you_go", 72.0, 80.0, "live: Tencent DescribeZoneInstanceConfigInfos"),
        ("ap-shanghai-5", "spot", 16.0, 20.0, "live: Tencent DescribeZoneInstanceConfigInfos"),
        ("ap-shanghai-8", "pay_as_you_go", 81.0, 81.0, "live: Tencent DescribeZoneInstanceConfigInfos"),
    ]
    charges = [c.params["Filters"] for c in tencent.actions("DescribeZoneInstanceConfigInfos")]
    assert charges == [[{"Name": "instance-charge-type", "Values": ["POSTPAID_BY_HOUR"]}],
                       [{"Name": "instance-charge-type", "Values": ["SPOTPAID"]}]]
    assert main(["plan", "--json", "examples/tencentcloud-hcc-2x8.yaml"]) == 0
    pool = json.loads(capsys.readouterr().out)["cost"]["pools"][0]
    assert (pool["per_node_per_hour"], pool["price_region"]) == (72.0, "ap-shanghai ap-shanghai-5")
    assert "(Tencent DescribeZoneInstanceConfigInfos)" in pool["price_source"]


def test_tencent_inquiry_prices_a_launch_with_its_system_disk(tencent: FakeTencentCloud) -> None:
    api = tencent_sdk.connect("ap-shanghai", retry=tencent_sdk.RetryPolicy(tries=2, base_s=0.0), sleep=Sleeps())
    now = datetime(2026, 12, 1, 10, 2, tzinfo=UTC)
    entry = tencent_prices.inquire(api, "ap-shanghai-5", "HCCG5v.24XLARGE384", "spot", "img-487zeit5", now)
    assert (entry.value, entry.list_value, entry.system_disk) == (16.4, 20.4, "CLOUD_BSSD 200 GiB")  # + 200 x 0.002
    assert entry.source == "live: Tencent InquiryPriceRunInstances"
    sent = tencent.actions("InquiryPriceRunInstances")[0].params
    assert (sent["InstanceChargeType"], sent["Placement"], sent["ImageId"]) == \
        ("SPOTPAID", {"Zone": "ap-shanghai-5"}, "img-487zeit5")


# --- the cache ----------------------------------------------------------------------------------------


def entry(read_at: datetime, **more: Any) -> PriceEntry:
    values: dict[str, Any] = {"provider": "alicloud", "region": REGION, "zone": None, "instance_type": ITYPE,
                              "billing": "pay_as_you_go", "currency": "CNY", "value": 100.0, "read_at": read_at,
                              "source": "live: Alibaba DescribePrice"}
    return PriceEntry(**(values | more))


def test_an_old_entry_is_shown_as_old_never_as_current() -> None:
    now = datetime(2026, 12, 10, 12, 0, tzinfo=UTC)
    fresh, old = entry(datetime(2026, 12, 9, 10, 2, tzinfo=UTC)), entry(datetime(2026, 12, 1, 10, 2, tzinfo=UTC))
    assert fresh.describe(now) == "live, read 2026-12-09 10:02 UTC (Alibaba DescribePrice)"
    assert old.describe(now) == "OLD (9 days, more than 7): live, read 2026-12-01 10:02 UTC (Alibaba DescribePrice)"


def test_plan_marks_an_old_live_price_and_warns(capsys: pytest.CaptureFixture[str]) -> None:
    save_cache(PriceCache(entries=[entry(datetime.now(UTC) - timedelta(days=30))]))
    assert main(["plan", "--json", "examples/alicloud-erdma-2x8.yaml"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["cost"]["pools"][0]["price_source"].startswith("OLD (30 days, more than 7): live, read ")
    assert any(w.startswith(f"cost: the live price of {ITYPE} (pay_as_you_go) is old: OLD (30 days")
               and "prices refresh --provider alicloud --region cn-wulanchabu" in w for w in plan["warnings"])


def test_the_cache_prefers_the_zone_then_the_region_and_merges_by_key() -> None:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    cache = PriceCache().merged([entry(at), entry(at, zone=ZONE, value=90.0),
                                 entry(at, billing="spot", zone=ZONE, value=30.0,
                                       history=[SpotPoint(at=at, value=30.0)])])
    assert cache.find("alicloud", REGION, ZONE, ITYPE, "pay_as_you_go").value == 90.0  # type: ignore[union-attr]
    assert cache.find("alicloud", REGION, "cn-wulanchabu-a", ITYPE, "pay_as_you_go").value == 100.0  # type: ignore[union-attr]
    assert cache.find("alicloud", REGION, None, ITYPE, "spot") is None
    again = cache.merged([entry(at + timedelta(hours=1), value=101.0)])
    assert len(again.entries) == 3
    assert again.find("alicloud", REGION, None, ITYPE, "pay_as_you_go").value == 101.0  # type: ignore[union-attr]


def test_a_damaged_cache_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "home" / "prices.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "entries": [{"provider": 3}]}')
    assert main(["plan", "examples/alicloud-erdma-2x8.yaml"]) == EXIT_USAGE
    assert f"the price cache {path} is damaged" in capsys.readouterr().err


def test_refresh_needs_a_region_or_a_cache(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prices", "refresh"]) == EXIT_USAGE
    assert "no region to refresh: the price cache is empty" in capsys.readouterr().err
    assert main(["prices", "refresh", "--region", REGION]) == EXIT_USAGE
    assert f"--region {REGION} needs --provider" in capsys.readouterr().err
