"""`gpuctl prices refresh` as a RAM user / CAM sub-user with the shipped policies attached.

The fakes (tests/fake_cloud/) decide every request against the attached policies with
toolkit.providers.policy and refuse the way the clouds do (Forbidden.RAM with its AccessDeniedDetail,
AuthFailure.UnauthorizedOperation): under the policies docs/security.md names for prices the
refresh succeeds; under one that lacks one action it exits 6 naming that action and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud.alibaba import FakeAlibabaCloud, Offer
from tests.fake_cloud.alibaba import serve as serve_alibaba
from tests.fake_cloud.tencent import FakeTencentCloud
from tests.fake_cloud.tencent import serve as serve_tencent
from tests.prices.cloud_env import isolate
from tests.providers.policy_mocks import READONLY, UP_DOWN, shipped, without
from toolkit.cli import main
from toolkit.errors import EXIT_PROVIDER
from toolkit.prices.cache import load_cache
from toolkit.providers.alicloud import sdk as alibaba_sdk
from toolkit.providers.tencentcloud import prices as tencent_prices
from toolkit.providers.tencentcloud import sdk as tencent_sdk

pytestmark = pytest.mark.fake_cloud

REPO = Path(__file__).resolve().parents[2]
KEY_ID, SECRET = "LTAI5tGpuctlPolicyKey001", "gpuctlFakeAlibabaPolicySecret001"
TC_ID, TC_KEY = "AKIDgpuctlPOLICY00000000000000000001", "gpuctlFakePolicySecretKey0000000001"
REGION, ZONE, ITYPE = "cn-wulanchabu", "cn-wulanchabu-c", "ecs.ebmgn7ex.32xlarge"
TC_TYPE = "GT4.4XLARGE96"  # examples/tencentcloud-gt4-spot.yaml


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def alibaba(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAlibabaCloud]:
    cloud = FakeAlibabaCloud(keys={KEY_ID: SECRET}, offers=[
        Offer(REGION, ITYPE, pay_as_you_go=120.0, disk_per_gib_hour={"cloud_essd": 0.001},
              spot={ZONE: [("2026-12-01T08:00:00Z", 30.5)]}, advice={ZONE: ("0-3%", 1.5, 26)})])
    with serve_alibaba(cloud) as url:
        monkeypatch.setenv(alibaba_sdk.ENDPOINT_ENV, url)
        monkeypatch.setenv("ALICLOUD_ACCESS_KEY", KEY_ID)
        monkeypatch.setenv("ALICLOUD_SECRET_KEY", SECRET)
        yield cloud


@pytest.fixture
def tencent(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTencentCloud]:
    offer: dict[str, Any] = {"Zone": "ap-shanghai-5", "InstanceType": TC_TYPE, "InstanceChargeType": "POSTPAID_BY_HOUR",
                             "Status": "SELL", "InstanceFamily": "GT4",
                             "Price": {"UnitPrice": 80.0, "UnitPriceDiscount": 72.0, "ChargeUnit": "HOUR"}}
    cloud = FakeTencentCloud(keys={TC_ID: TC_KEY}, offers=[offer])
    with serve_tencent(cloud) as url:
        monkeypatch.setenv(tencent_sdk.ENDPOINT_ENV, url)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", TC_ID)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", TC_KEY)
        yield cloud


def refresh(capsys: pytest.CaptureFixture[str], provider: str, region: str, itype: str) -> tuple[int, str]:
    code = main(["prices", "refresh", "--provider", provider, "--region", region, "--instance-type", itype])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("policy", [UP_DOWN["alicloud"], READONLY])
def test_alibaba_prices_refresh_succeeds_under_the_shipped_policies(
    policy: str, alibaba: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str],
) -> None:
    alibaba.policies[KEY_ID] = [shipped(policy)]
    code, err = refresh(capsys, "alicloud", REGION, ITYPE)
    assert (code, err) == (0, "")
    assert [e.billing for e in load_cache().entries] == ["pay_as_you_go", "spot"]
    assert {c.answered for c in alibaba.calls} == {"ok"}


@pytest.mark.parametrize("action", ["ecs:DescribePrice", "ecs:DescribeSpotPriceHistory", "ecs:DescribeSpotAdvice"])
def test_alibaba_prices_refresh_under_a_policy_without_one_action_exits_6_naming_it(
    action: str, alibaba: FakeAlibabaCloud, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    alibaba.policies[KEY_ID] = [without(shipped(READONLY), action)]
    code, err = refresh(capsys, "alicloud", REGION, ITYPE)
    assert code == EXIT_PROVIDER
    assert err.startswith("gpuctl prices: error: Alibaba Cloud refused the credentials (Forbidden.RAM): "
                          f"the RAM user may not call {action}")
    refused = [c for c in alibaba.calls if c.answered == "Forbidden.RAM"]
    assert [c.action for c in refused] == [action.removeprefix("ecs:")]
    assert not (tmp_path / "home").exists() or [p for p in (tmp_path / "home").rglob("*") if p.is_file()] == []


def test_alibabas_refusal_carries_the_access_denied_detail(alibaba: FakeAlibabaCloud) -> None:
    """What the SDK core reads from a RAM refusal (alibabacloud_tea_openapi get_access_denied_detail)."""
    from alibabacloud_ecs20140526 import models
    from darabonba.exceptions import DaraException

    alibaba.policies[KEY_ID] = [without(shipped(READONLY), "ecs:DescribeRegions")]
    client = alibaba_sdk.connect(REGION).client()
    from darabonba.runtime import RuntimeOptions

    with pytest.raises(DaraException) as caught:
        client.describe_regions_with_options(models.DescribeRegionsRequest(), RuntimeOptions())
    detail = caught.value.data["AccessDeniedDetail"]
    assert (caught.value.code, caught.value.data["statusCode"]) == ("Forbidden.RAM", 403)
    assert (detail["AuthAction"], detail["NoPermissionType"], detail["AuthPrincipalType"]) == \
        ("ecs:DescribeRegions", "ImplicitDeny", "SubUser")


def test_tencent_prices_refresh_succeeds_under_the_shipped_policy(
    tencent: FakeTencentCloud, capsys: pytest.CaptureFixture[str],
) -> None:
    tencent.policies[TC_ID] = [shipped(UP_DOWN["tencentcloud"])]
    code, err = refresh(capsys, "tencentcloud", "ap-shanghai", TC_TYPE)
    assert (code, err) == (0, "")
    assert [(e.zone, e.billing, e.value) for e in load_cache().entries] == [("ap-shanghai-5", "pay_as_you_go", 72.0)]
    api = tencent_sdk.connect("ap-shanghai", retry=tencent_sdk.RetryPolicy(tries=1))
    entry = tencent_prices.inquire(api, "ap-shanghai-5", TC_TYPE, "pay_as_you_go", "img-487zeit5",
                                   datetime(2026, 12, 1, tzinfo=UTC))
    assert entry.source == "live: Tencent InquiryPriceRunInstances"


def test_tencent_prices_refresh_without_one_action_exits_6_naming_it(
    tencent: FakeTencentCloud, capsys: pytest.CaptureFixture[str],
) -> None:
    tencent.policies[TC_ID] = [without(shipped(UP_DOWN["tencentcloud"]), "cvm:DescribeZoneInstanceConfigInfos")]
    code, err = refresh(capsys, "tencentcloud", "ap-shanghai", TC_TYPE)
    assert code == EXIT_PROVIDER
    assert err.startswith("gpuctl prices: error: Tencent Cloud refused the credentials "
                          "(AuthFailure.UnauthorizedOperation): the key may not call "
                          "DescribeZoneInstanceConfigInfos (CAM)")
    assert [c.answered for c in tencent.calls] == ["AuthFailure.UnauthorizedOperation"]
    error = tencent.calls[0]
    assert error.action == "DescribeZoneInstanceConfigInfos"
