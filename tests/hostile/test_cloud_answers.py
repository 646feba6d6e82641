"""Hostile-input corpus: what the fake clouds answer, and how they fail, through reap, prices refresh and cost.

Each case is one way an answer can be wrong (tests/fake_cloud/{tencent,alibaba}.py say where in
the SDKs each one is met): an HTTP 5xx with and without a body, a body that is not JSON, empty,
`null` or without the documented keys, fields of the wrong type (a string where a list belongs,
1e308, negative, "NaN"), paging that never ends, answers slower than the timeout, throttling and
refused credentials on every try. Every case runs the real CLI (`run_case`) against the fakes on
loopback, each command whose calls the fault reaches: a fault of every action meets `reap` (a dry
run), `reap --yes --include-orphaned`, `prices refresh` and `cost` (which asks no cloud API: it
reads the stack through the driver); a fault of the instance or region list meets both reaps, of
the release `reap --yes`, of a price call `prices refresh`. Counted: internal errors, hangs,
leaks of the canary credentials, and actions on what gpuctl did not create or must not remove: a
release the fake receives for an instance that is not (tagged by gpuctl with its cluster id AND
past its own expiry tag), and a `down` of a cluster the state does not say expired. Also checked:
a list that failed names its region (never silently partial), and no refused price reaches the cache.

Short bounds are injected for the tests only (`cloud_api.LIMITS`): a 0.15 s timeout, two tries,
a 1 s budget per command, 4 pages per list.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud import alibaba, tencent
from tests.hostile.harness import CANARIES, Outcome, run_case, tally
from tests.reap.conftest import REPO, alibaba_instance, gpuctl_tags, tencent_instance, write_stack
from toolkit.providers import cloud_api
from toolkit.providers.tags import TAG_CLUSTER_ID, TAG_EXPIRES, TAG_MANAGED_BY

pytestmark = pytest.mark.fake_cloud

SURFACE = "cloud answers and faults"
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "GPUCTL_PULUMI_BACKEND",
           "ALICLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
           "TENCENTCLOUD_SECURITY_TOKEN", "GPUCTL_CNY_PER_USD")
TEST_LIMITS = cloud_api.Limits(timeout_s=0.15, retry=cloud_api.RetryPolicy(tries=2, base_s=0.005, cap_s=0.01),
                               deadline_s=1.0, max_pages=4, max_items=300)
TC_TYPE, ALI_TYPE = "HCCG5v.24XLARGE384", "ecs.ebmgn7ex.32xlarge"
SPECS = {"tencentcloud": REPO / "examples/tencentcloud-hcc-2x8.yaml",
         "alicloud": REPO / "examples/alicloud-erdma-2x8.yaml"}
PRICE_REGIONS = {"tencentcloud": "ap-shanghai", "alicloud": "cn-wulanchabu"}
LISTS = {"tencentcloud": "DescribeInstances", "alicloud": "DescribeInstances"}
RELEASES = {"tencentcloud": "TerminateInstances", "alicloud": "DeleteInstances"}
EXPIRED, LIVE = "2026-01-01T08:00:00Z", "2099-01-01T00:00:00Z"


# --- the clouds: instances of every kind reap must tell apart -------------------------------------


def ours(cluster: str, cluster_id: str | None, expires: str, **more: str) -> dict[str, str]:
    return {**gpuctl_tags(cluster, cluster_id, expires), **more}


# (id, region, tags): each cloud gets the same kinds. Only "lost" and "mix-old" may be released.
KINDS: list[tuple[str, str, dict[str, str]]] = [
    ("lost", "a", ours("lost", "cccccccccccc", EXPIRED)),
    ("mix-old", "a", ours("mixed", "dddddddddddd", EXPIRED)),
    ("mix-new", "a", ours("mixed", "dddddddddddd", LIVE)),  # its neighbour's expiry is not its own
    ("badexp", "a", ours("badexp", "eeeeeeeeeeee", "not a time")),
    ("y0001", "a", ours("y0001", "ffffffffffff", "0001-01-01T00:00:00Z")),
    ("y9999", "b", ours("y9999", "aaaaaaaaaaab", "9999-12-31T23:59:59Z")),
    ("noexp", "b", {k: v for k, v in ours("noexp", "aaaaaaaaaaac", EXPIRED).items() if k != TAG_EXPIRES}),
    ("noid", "b", ours("noid", None, EXPIRED)),
    ("other", "b", ours("other", "aaaaaaaaaaad", EXPIRED, **{TAG_MANAGED_BY: "terraform"})),
    ("untagged", "b", {"project": "llm"}),
]


def tencent_cloud() -> tencent.FakeTencentCloud:
    zones = {"a": "ap-guangzhou-3", "b": "ap-shanghai-5"}
    instances = [tencent_instance(f"ins-{name}", zones[where], tags) for name, where, tags in KINDS]
    instances += [tencent_instance(f"ins-old{n}", "ap-shanghai-5", ours("old-hcc", "aaaaaaaaaaaa", EXPIRED))
                  for n in range(2)]
    offers = [{"Zone": "ap-shanghai-5", "InstanceType": TC_TYPE, "InstanceChargeType": charge, "Status": "SELL",
               "InstanceFamily": TC_TYPE, "Price": {"UnitPrice": 80.0, "UnitPriceDiscount": 72.0, "ChargeUnit": "HOUR"}}
              for charge in ("POSTPAID_BY_HOUR", "SPOTPAID")]
    return tencent.FakeTencentCloud(keys={CANARIES["TENCENTCLOUD_SECRET_ID"]: CANARIES["TENCENTCLOUD_SECRET_KEY"]},
                                    regional=True, regions=["ap-guangzhou", "ap-shanghai"], instances=instances,
                                    offers=offers)


def alibaba_cloud() -> alibaba.FakeAlibabaCloud:
    regions = {"a": "cn-hangzhou", "b": "cn-wulanchabu"}
    instances = [alibaba_instance(f"i-{name}", regions[where], tags) for name, where, tags in KINDS]
    instances.append(alibaba_instance("i-live0", "cn-wulanchabu", ours("live-erdma", "bbbbbbbbbbbb", LIVE)))
    offer = alibaba.Offer("cn-wulanchabu", ALI_TYPE, pay_as_you_go=120.0, discount=12.0,
                          disk_per_gib_hour={"cloud_essd": 0.001}, spot={"cn-wulanchabu-c": [("2026-12-01T09:00:00Z",
                                                                                             31.25)]},
                          advice={"cn-wulanchabu-c": ("0-3%", 1.5, 26)})
    return alibaba.FakeAlibabaCloud(keys={CANARIES["ALICLOUD_ACCESS_KEY"]: CANARIES["ALICLOUD_SECRET_KEY"]},
                                    regions=["cn-hangzhou", "cn-wulanchabu"], instances=instances, offers=[offer])


def may_release(tags: dict[str, str], now: datetime) -> bool:
    """The rule, written out here (not read from gpuctl): gpuctl's tags with a cluster id, and its own
    expiry tag a plain UTC time in 2000..2199 that is past."""
    if tags.get(TAG_MANAGED_BY) != "gpuctl" or not tags.get(TAG_CLUSTER_ID) or not tags.get("gpuctl:cluster"):
        return False
    try:
        expires = datetime.fromisoformat(tags.get(TAG_EXPIRES, "").replace("Z", "+00:00"))
    except ValueError:
        return False
    return expires.tzinfo is not None and 2000 <= expires.year < 2200 and expires <= now


def tags_of(instance: dict[str, Any]) -> dict[str, str]:
    if isinstance(instance.get("Tags"), list):
        return {t["Key"]: t["Value"] for t in instance["Tags"]}
    return {t["TagKey"]: t["TagValue"] for t in instance["Tags"]["Tag"]}


def released_ids(provider: str, call: Any) -> list[str]:
    if provider == "tencentcloud":
        return list(call.params.get("InstanceIds") or ())
    return [v for k, v in sorted(call.params.items()) if k.startswith("InstanceId.")]


# --- the faults -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One way to answer wrong: the same fault for both clouds, on `actions` (a list action name is
    the cloud's own: LISTS / RELEASES), every call."""

    name: str
    tencent: list[tencent.Fault] = field(default_factory=list)
    alibaba: list[alibaba.Fault] = field(default_factory=list)
    paging: tuple[str | None, str | None] = (None, None)  # (tencent, alibaba) endless modes
    lists_fail: bool = False  # the instance list cannot be read: every region must be named as not searched
    reaches: tuple[str, ...] = ("reap", "reap --yes --include-orphaned")  # the commands that make the faulted calls


EVERY = ("reap", "reap --yes --include-orphaned", "prices refresh", "cost")
PRICES = ("prices refresh",)


def raw(name: str, status: int, body: bytes | None, actions: tuple[str, ...] = ("*",),
        content_type: str = "application/json") -> Case:
    return Case(name, [tencent.Fault(a, status=status, body=body, content_type=content_type, times=10**6)
                       for a in actions],
                [alibaba.Fault(a, status=status, body=body, content_type=content_type, times=10**6) for a in actions],
                lists_fail=True, reaches=EVERY if actions == ("*",) else Case.reaches)


def reshaped(name: str, tc: Callable[[dict[str, Any]], Any] | None, ali: Callable[[dict[str, Any]], Any] | None,
             tc_action: str = "DescribeInstances", ali_action: str = "DescribeInstances",
             lists_fail: bool = False) -> Case:
    return Case(name, [tencent.Fault(tc_action, reshape=tc, times=10**6)] if tc else [],
                [alibaba.Fault(ali_action, reshape=ali, times=10**6)] if ali else [], lists_fail=lists_fail,
                reaches=PRICES if ali_action in ("DescribePrice", "DescribeSpotPriceHistory") else Case.reaches)


def each_tencent_instance(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], Any]:
    def reshape(response: dict[str, Any]) -> Any:
        for item in response.get("InstanceSet") or ():
            change(item)
        return response
    return reshape


def each_alibaba_instance(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], Any]:
    def reshape(response: dict[str, Any]) -> Any:
        for item in response.get("Instances", {}).get("Instance") or ():
            change(item)
        return response
    return reshape


def set_expiry(value: Any, alibaba_style: bool) -> Callable[[dict[str, Any]], None]:
    def change(item: dict[str, Any]) -> None:
        tags = item["Tags"]["Tag"] if alibaba_style else item["Tags"]
        for tag in tags:
            if tag.get("TagKey" if alibaba_style else "Key") == TAG_EXPIRES:
                tag["TagValue" if alibaba_style else "Value"] = value
    return change


def with_price(value: Any) -> tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any]]:
    def tc(response: dict[str, Any]) -> Any:
        for item in response.get("InstanceTypeQuotaSet") or ():
            item["Price"] = {"UnitPrice": value, "UnitPriceDiscount": value, "ChargeUnit": "HOUR"}
        return response

    def ali(response: dict[str, Any]) -> Any:
        price = response["PriceInfo"]["Price"]
        for detail in price["DetailInfos"]["DetailInfo"]:
            detail["TradePrice"] = value
        price["TradePrice"] = value
        return response
    return tc, ali


def cases() -> list[Case]:
    found = [
        # HTTP statuses without the API's error in them: what a gateway answers when the service is down.
        raw("http 500, empty body", 500, b""),
        raw("http 502, an HTML page", 502, b"<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
        raw("http 503, JSON without a code", 503, b'{"Message": "the service is busy"}'),
        raw("http 500 on the instance list only", 500, b"", actions=("DescribeInstances",)),
        # 200 with a body that is not the API's answer.
        raw("not JSON", 200, b"this is not json {"),
        raw("empty body", 200, b""),
        raw("null body", 200, b"null"),
        raw("empty object", 200, b"{}"),
        raw("a JSON array", 200, b"[1, 2, 3]"),
        raw("not UTF-8", 200, b"\xff\xfe\x00garbage\x80", content_type="text/plain"),
        raw("Response null", 200, b'{"Response": null}'),
        raw("Error that is a string", 200, b'{"Response": {"Error": "boom", "RequestId": "r"}}'),
        # The right shape, fields of the wrong type.
        reshaped("the instance list is a string",
                 lambda r: {**r, "InstanceSet": "i-1,i-2"},
                 lambda r: {**r, "Instances": {"Instance": "i-1,i-2"}}),
        reshaped("Instances is a string", None, lambda r: {**r, "Instances": "many"}),
        reshaped("TotalCount 1e308", lambda r: {**r, "TotalCount": 1e308}, lambda r: {**r, "TotalCount": 1e308}),
        reshaped("TotalCount negative", lambda r: {**r, "TotalCount": -5}, lambda r: {**r, "TotalCount": -5}),
        reshaped("TotalCount NaN as text", lambda r: {**r, "TotalCount": "NaN"}, lambda r: {**r, "TotalCount": "NaN"}),
        reshaped("instance ids are numbers",
                 each_tencent_instance(lambda i: i.update(InstanceId=1e308)),
                 each_alibaba_instance(lambda i: i.update(InstanceId=-1))),
        reshaped("tags are a string",
                 each_tencent_instance(lambda i: i.update(Tags="gpuctl:cluster=lost")),
                 each_alibaba_instance(lambda i: i.update(Tags="gpuctl:cluster=lost"))),
        reshaped("expiry tags are NaN",
                 each_tencent_instance(set_expiry("NaN", False)), each_alibaba_instance(set_expiry("NaN", True))),
        reshaped("expiry tags are 1e308",
                 each_tencent_instance(set_expiry(1e308, False)), each_alibaba_instance(set_expiry(1e308, True))),
        reshaped("expiry tags are -1",
                 each_tencent_instance(set_expiry("-1", False)), each_alibaba_instance(set_expiry("-1", True))),
        reshaped("the region list is a string", lambda r: {**r, "RegionSet": "ap-guangzhou"},
                 lambda r: {**r, "Regions": {"Region": "cn-hangzhou"}}, "DescribeRegions", "DescribeRegions"),
        reshaped("region names are numbers", lambda r: {**r, "RegionSet": [{"Region": 1e308}, {"Region": None}]},
                 lambda r: {**r, "Regions": {"Region": [{"RegionId": -1}]}}, "DescribeRegions", "DescribeRegions"),
        # Paging that never ends.
        Case("the same page whatever the offset / the same NextToken", paging=("first-page", "same-token"),
             lists_fail=True),
        Case("a fresh full page every time", paging=("fresh", "fresh"), lists_fail=True),
        # Slow, throttled, refused.
        Case("slower than the timeout, every call", [tencent.Fault("*", delay_s=0.3, times=10**6)],
             [alibaba.Fault("*", delay_s=0.3, times=10**6)], lists_fail=True, reaches=EVERY),
        Case("throttled on every try", [tencent.Fault("*", "RequestLimitExceeded", "slow down", times=10**6)],
             [alibaba.Fault("*", "Throttling.User", status=403, times=10**6)], lists_fail=True, reaches=EVERY),
        Case("InternalError on every try", [tencent.Fault("*", "InternalError", "oops", times=10**6)],
             [alibaba.Fault("*", "InternalError", times=10**6)], lists_fail=True, reaches=EVERY),
        Case("credentials refused", [tencent.Fault("*", "AuthFailure.UnauthorizedOperation", "no", times=10**6)],
             [alibaba.Fault("*", "Forbidden.RAM", times=10**6)], lists_fail=True, reaches=EVERY),
        # The release itself fails or answers nonsense: nothing else may be released instead.
        Case("the release answers 500", [tencent.Fault("TerminateInstances", status=500, body=b"", times=10**6)],
             [alibaba.Fault("DeleteInstances", status=500, body=b"", times=10**6)],
             reaches=("reap --yes --include-orphaned",)),
        Case("the release answers slowly", [tencent.Fault("TerminateInstances", delay_s=0.3, times=10**6)],
             [alibaba.Fault("DeleteInstances", delay_s=0.3, times=10**6)],
             reaches=("reap --yes --include-orphaned",)),
    ]
    for label, value in (("NaN", "NaN"), ("negative", -12.5), ("1e308", 1e308), ("a huge integer", 10**30),
                         ("a string", "cheap")):
        tc, ali = with_price(value)
        found.append(replace(reshaped(f"prices are {label}", tc, ali, "DescribeZoneInstanceConfigInfos",
                                      "DescribePrice"), reaches=PRICES))
    found += [
        reshaped("DescribePrice without a TradePrice", None,
                 lambda r: {"PriceInfo": {"Price": {"Currency": "CNY", "DetailInfos": {"DetailInfo": []}}}},
                 ali_action="DescribePrice"),
        reshaped("the price detail is a string", lambda r: {**r, "InstanceTypeQuotaSet": "HCCG5v.24XLARGE384"},
                 lambda r: {"PriceInfo": {"Price": {"DetailInfos": {"DetailInfo": "x"}, "TradePrice": 1.0}}},
                 "DescribeZoneInstanceConfigInfos", "DescribePrice"),
        # Tencent's charge type (reap batches by it; PREPAID is terminated, awaited in the recycle bin,
        # terminated again): of the wrong type; claimed PREPAID of instances the first terminate destroys;
        # PREPAID ones that never show SHUTDOWN (the release answers "already terminating").
        reshaped("charge types of the wrong type",
                 each_tencent_instance(lambda i: i.update(InstanceChargeType=1e308)), None),
        reshaped("every instance claims PREPAID",
                 each_tencent_instance(lambda i: i.update(InstanceChargeType="PREPAID")), None),
        Case("PREPAID instances that never reach the recycle bin",
             [tencent.Fault("DescribeInstances", times=10**6,
                            reshape=each_tencent_instance(lambda i: i.update(InstanceChargeType="PREPAID"))),
              tencent.Fault("TerminateInstances", "InvalidInstanceState.Terminating", "already", times=10**6)],
             reaches=("reap --yes --include-orphaned",)),
        # No fault at all: the baseline every other case differs from.
        Case("no fault", reaches=EVERY),
        reshaped("spot history of the wrong types", None,
                 lambda r: {**r, "SpotPrices": {"SpotPriceType": [{"SpotPrice": "NaN", "ZoneId": 7, "Timestamp": 1},
                                                                  {"SpotPrice": -3, "ZoneId": "z",
                                                                   "Timestamp": "9999-12-31T23:59:59Z"}, "x"]}},
                 ali_action="DescribeSpotPriceHistory"),
    ]
    return found


# --- running them ---------------------------------------------------------------------------------


class Downs(list[tuple[str, str]]):
    """The `down` calls reap made (no Pulumi runs): (provider, cluster)."""


@pytest.fixture
def downs(monkeypatch: pytest.MonkeyPatch) -> Downs:
    from toolkit.providers import registry

    made = Downs()

    class Driver:
        def __init__(self, provider: str) -> None:
            self.name = provider

        def down(self, spec: Any, progress: Callable[[str], None], *, delete_storage: bool = False) -> bool:
            made.append((spec.provider, spec.name))
            return True

        def status(self, spec: Any) -> dict[str, object]:
            return {"exists": True, "created_at": "2026-01-01T00:00:00Z", "expires_at": None}

    monkeypatch.setattr(registry, "get_driver", lambda provider, backend_url=None: Driver(provider))
    return made


@pytest.fixture
def clouds(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, tuple[Any, str]]]:
    monkeypatch.setattr(cloud_api, "LIMITS", TEST_LIMITS)
    monkeypatch.chdir(REPO)
    tc, ali = tencent_cloud(), alibaba_cloud()
    with tencent.serve(tc) as tc_url, alibaba.serve(ali) as ali_url:
        yield {"tencentcloud": (tc, tc_url), "alicloud": (ali, ali_url)}


def reset(provider: str, cloud: Any, case: Case) -> None:
    fresh = tencent_cloud() if provider == "tencentcloud" else alibaba_cloud()
    with cloud.lock:
        cloud.instances = fresh.instances
        cloud.calls.clear()
        cloud.faults[:] = [replace(f) for f in (case.tencent if provider == "tencentcloud" else case.alibaba)]
        cloud.paging = case.paging[0 if provider == "tencentcloud" else 1]


def home_for(root: Path) -> Path:
    home = root / "home"
    write_stack(home, "old-hcc", "tencentcloud", "ap-shanghai", "aaaaaaaaaaaa", created="2026-01-01T00:00:00Z",
                expires=EXPIRED, types=["GT4.4XLARGE96", "GT4.4XLARGE96"])
    write_stack(home, "live-erdma", "alicloud", "cn-wulanchabu", "bbbbbbbbbbbb", created="2026-01-01T00:00:00Z",
                expires=LIVE, types=["ecs.ebmgn7ex.32xlarge"])
    return home


def check(provider: str, cloud: Any, case: Case, command: str, outcome: Outcome, downs: Downs, home: Path,
          now: datetime) -> tuple[list[str], list[str]]:
    """(actions on what gpuctl must not touch, broken promises) of one run."""
    before = {i["InstanceId"]: tags_of(i) for i in (tencent_cloud() if provider == "tencentcloud"
                                                    else alibaba_cloud()).instances}
    actions = [f"{RELEASES[provider]} of {id_}" for call in cloud.calls if call.action == RELEASES[provider]
               for id_ in released_ids(provider, call) if not may_release(before.get(id_, {}), now)]
    actions += [f"down of {name} ({where})" for where, name in downs if (where, name) != ("tencentcloud", "old-hcc")]
    broken: list[str] = []
    if command.startswith("reap") and outcome.code is not None and outcome.out.startswith("{"):
        document = json.loads(outcome.out)
        unreachable = {(g["provider"], g["region"]) for g in document["unreachable"]}
        searched = set(document["searched"])
        if case.lists_fail and not any(p == provider for p, _ in unreachable):
            broken.append(f"{command}: the instance list failed, yet no region is named as not searched")
        if outcome.code == 0 and unreachable:
            broken.append(f"{command}: exit 0 with regions not searched")
        if not case.lists_fail and not case.tencent and not case.alibaba and not searched:
            broken.append(f"{command}: nothing searched")
    cache = home / "prices.json"
    if cache.exists():
        for entry in json.loads(cache.read_text()).get("entries", []):
            value = entry.get("value")
            if not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 100_000:
                broken.append(f"{command}: the cache took the price {value!r}")
    return actions, broken


def test_cloud_answers_and_faults_corpus(clouds: dict[str, tuple[Any, str]], downs: Downs, tmp_path: Path) -> None:
    record = tally(SURFACE)
    env = {"GPUCTL_TENCENTCLOUD_ENDPOINT": clouds["tencentcloud"][1],
           "GPUCTL_ALICLOUD_ENDPOINT": clouds["alicloud"][1],
           "TENCENTCLOUD_SHARED_CREDENTIALS_DIR": str(tmp_path / "no-tccli")}
    broken: list[str] = []
    number = 0
    for case in cases():
        for provider in ("tencentcloud", "alicloud"):
            if not (case.tencent if provider == "tencentcloud" else case.alibaba) and case.paging == (None, None) \
                    and case.name != "no fault":
                continue  # a fault of the other cloud's only
            cloud = clouds[provider][0]
            for command, argv in (
                ("reap", ["reap", "--json", "--provider", provider]),
                ("reap --yes --include-orphaned", ["reap", "--json", "--provider", provider, "--yes",
                                                   "--include-orphaned"]),
                ("prices refresh", ["prices", "refresh", "--json", "--provider", provider, "--region",
                                    PRICE_REGIONS[provider], "--instance-type",
                                    TC_TYPE if provider == "tencentcloud" else ALI_TYPE]),
                ("cost", ["cost", "--json", str(SPECS[provider])]),
            ):
                if command not in case.reaches:
                    continue
                number += 1
                reset(provider, cloud, case)
                downs.clear()
                home = home_for(tmp_path / f"case{number}")
                now = datetime.now(UTC)
                outcome = run_case(f"{case.name} / {provider} / {command}", argv, home=home, env=env, drop=PROXIES,
                                   timeout=8.0)
                actions, problems = check(provider, cloud, case, command, outcome, downs, home, now)
                record.record(outcome, actions=actions)
                broken += [f"{case.name} / {provider} / {p}" for p in problems]
    record.assert_clean(minimum=180)
    assert broken == [], "\n".join(broken)
