"""The Tencent driver's own calls through the SDK, against the fake API on loopback: the checks
before the first create (refuse before Pulumi runs) and the tag search `down` ends with. The
Pulumi plumbing they sit in is the shared one (tests/providers/test_alicloud_driver.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_cloud.tencent import FakeTencentCloud, serve
from tests.providers.test_tencentcloud_sdk import (
    CLUSTER,
    CLUSTER_ID,
    REGION,
    SECRET_ID,
    SECRET_KEY,
    ZONE,
    cluster_tags,
    instance,
    offer,
    quota,
    spec,
)
from toolkit.errors import CatalogError
from toolkit.providers.tencentcloud.driver import TencentcloudDriver
from toolkit.providers.tencentcloud.sdk import ENDPOINT_ENV

pytestmark = pytest.mark.fake_cloud


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTencentCloud]:
    fake = FakeTencentCloud(keys={SECRET_ID: SECRET_KEY})
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with serve(fake) as url:
        monkeypatch.setenv(ENDPOINT_ENV, url)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)
        yield fake


def test_first_create_checks_refuse_a_sold_out_zone_and_name_where_it_is_sold(cloud: FakeTencentCloud) -> None:
    cloud.offers += [offer(ZONE, "SOLD_OUT", "WithoutStock"), offer("ap-shanghai-4")]
    cloud.quota = quota()
    lines: list[str] = []
    with pytest.raises(CatalogError) as caught:
        TencentcloudDriver().first_create_checks(spec(), lines.append)
    text = str(caught.value)
    assert "HCCG5v.24XLARGE384" in text
    assert ZONE in text
    assert "ap-shanghai-4" in text
    assert "nothing was created" in text
    assert lines == [f"asking Tencent Cloud whether {ZONE} sells what {CLUSTER} needs (stock, quota)"]
    assert not cloud.actions("RunInstances") or all(c.params.get("DryRun") for c in cloud.actions("RunInstances"))


def test_first_create_checks_pass_when_sold_with_quota(cloud: FakeTencentCloud) -> None:
    cloud.offers += [offer(ZONE)]
    cloud.quota = quota()
    cloud.images = [{"ImageId": "img-487zeit5", "ImageName": "Ubuntu Server 22.04 LTS 64位",
                     "ImageType": "PUBLIC_IMAGE", "CreatedTime": "2025-06-01T00:00:00Z"}]
    lines: list[str] = []
    TencentcloudDriver().first_create_checks(spec(), lines.append)
    assert lines[0] == f"asking Tencent Cloud whether {ZONE} sells what {CLUSTER} needs (stock, quota)"
    assert [c.action for c in cloud.calls][:1] == ["DescribeZoneInstanceConfigInfos"]


def test_the_tag_search_goes_through_the_sdk_and_proves_by_cluster_id(cloud: FakeTencentCloud) -> None:
    cloud.instances.append(instance("ins-aaaa1111", "hcc-v100-gpu-0", cluster_tags()))
    cloud.instances.append(instance("ins-bbbb2222", "hcc-v100-gpu-1", cluster_tags(cluster_id="ffffffffffff")))
    found = TencentcloudDriver().cloud_leftovers(spec(), REGION, CLUSTER_ID)
    assert [line.line() for line in found] == [
        "CVM instance ins-aaaa1111 (hcc-v100-gpu-0): tccli cvm TerminateInstances --region ap-shanghai "
        "--InstanceIds '[\"ins-aaaa1111\"]'"
    ]


def test_the_storage_stacks_network_is_neither_a_leftover_nor_a_second_copy(cloud: FakeTencentCloud) -> None:
    """The VPC and subnet a created CFS lives in are the storage stack's and outlive `down` on purpose:
    they carry gpuctl:keep-on-down (storage tags), and the tag search passes them by, both after `down`
    (with the id) and before the next first `up` (without). The cluster's own VPC is still reported."""
    storage = [*cluster_tags(), {"Key": "gpuctl:keep-on-down", "Value": "true"}]
    cloud.vpcs += [
        {"VpcId": "vpc-st0rage1", "VpcName": f"{CLUSTER}-vpc", "TagSet": storage},
        {"VpcId": "vpc-c1uster1", "VpcName": f"{CLUSTER}-vpc", "TagSet": cluster_tags()},
    ]
    cloud.subnets.append({"SubnetId": "subnet-st0rage1", "SubnetName": f"{CLUSTER}-subnet", "VpcId": "vpc-st0rage1",
                          "Zone": ZONE, "TagSet": storage})
    for cluster_id in (CLUSTER_ID, None):
        found = TencentcloudDriver().cloud_leftovers(spec(), REGION, cluster_id)
        assert [item.line().split(" (", 1)[0] for item in found] == ["VPC vpc-c1uster1"]
    assert cloud.actions("DescribeSubnets")  # asked, and passed by
