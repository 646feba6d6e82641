"""Tencent preflight and the leftover search as a CAM sub-user with the shipped policy attached: the
fake (tests/fake_cloud/tencent.py) decides every request against it; with one action taken out the
check stops with the API's AuthFailure.UnauthorizedOperation, naming the action (exit 6)."""

from __future__ import annotations

import pytest

from tests.fake_cloud.tencent import FakeTencentCloud
from tests.providers.policy_mocks import UP_DOWN, shipped, without
from tests.providers.test_tencentcloud_sdk import (  # the fixtures and the state they set up
    CLUSTER,
    CLUSTER_ID,
    HCC,
    SECRET_ID,
    ZONE,
    Sleeps,
    cloud,
    endpoint,
    make_api,
    offer,
    populate,
    quota,
    sleeps,
    spec,
)
from toolkit.errors import EXIT_PROVIDER, CatalogError
from toolkit.providers.tencentcloud.leftovers import find_leftovers
from toolkit.providers.tencentcloud.preflight import preflight
from toolkit.providers.tencentcloud.sdk import ApiError

pytestmark = pytest.mark.fake_cloud
FIXTURES = (cloud, endpoint, sleeps)  # imported for pytest to find


def _sold(fake: FakeTencentCloud) -> None:
    fake.offers += [offer(ZONE)]
    fake.quota = quota(remaining=10)
    # The spec's HCC pool is dry run in an HPC cluster of the zone (preflight.py); without one it is skipped.
    fake.hcc_types = frozenset({HCC})
    fake.hpc_clusters.append({"HpcClusterId": "hpc-aaaa1111", "Name": "other-team", "Zone": ZONE, "Remark": "",
                              "HpcClusterType": "STANDARD", "InstanceIds": [], "Tags": []})


def test_preflight_passes_under_the_shipped_policy(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.policies[SECRET_ID] = [shipped(UP_DOWN["tencentcloud"])]
    _sold(cloud)
    report = preflight(spec(), make_api(endpoint, sleeps), images={"gpu": "img-487zeit5"})
    assert report.problems == []
    assert [c.action for c in cloud.calls] == ["DescribeZoneInstanceConfigInfos", "DescribeAccountQuota",
                                               "DescribeHpcClusters", "RunInstances"]
    assert cloud.actions("RunInstances")[0].answered == "DryRunOperation"


@pytest.mark.parametrize("action", ["cvm:DescribeZoneInstanceConfigInfos", "cvm:DescribeAccountQuota",
                                    "cvm:DescribeHpcClusters"])
def test_preflight_without_one_action_stops_naming_it(action: str, cloud: FakeTencentCloud, endpoint: str,
                                                      sleeps: Sleeps) -> None:
    cloud.policies[SECRET_ID] = [without(shipped(UP_DOWN["tencentcloud"]), action)]
    _sold(cloud)
    name = action.removeprefix("cvm:")
    with pytest.raises(ApiError) as caught:
        preflight(spec(), make_api(endpoint, sleeps), images={"gpu": "img-487zeit5"})
    assert caught.value.code == "AuthFailure.UnauthorizedOperation"
    assert caught.value.exit_code == EXIT_PROVIDER
    assert f"the key may not call {name} (CAM)" in caught.value.message
    assert f"you are not authorized to perform operation ({action})" in caught.value.api_message


def test_a_dry_run_the_policy_refuses_is_a_problem_naming_the_action(cloud: FakeTencentCloud, endpoint: str,
                                                                     sleeps: Sleeps) -> None:
    """The dry run's refusal is one of the pool's problems (preflight.py collects them; exit 4), named."""
    cloud.policies[SECRET_ID] = [without(shipped(UP_DOWN["tencentcloud"]), "cvm:RunInstances")]
    _sold(cloud)
    with pytest.raises(CatalogError) as caught:
        preflight(spec(), make_api(endpoint, sleeps), images={"gpu": "img-487zeit5"})
    assert caught.value.problems[1].startswith(
        "  - node pool gpu: Tencent Cloud refused the credentials (AuthFailure.UnauthorizedOperation): the key may not "
        "call RunInstances (dry run) (CAM)")


def test_the_leftover_search_runs_under_the_shipped_policy(cloud: FakeTencentCloud, endpoint: str,
                                                           sleeps: Sleeps) -> None:
    cloud.policies[SECRET_ID] = [shipped(UP_DOWN["tencentcloud"])]
    populate(cloud)
    found = find_leftovers(make_api(endpoint, sleeps), CLUSTER, CLUSTER_ID)
    assert len(found) == 9
    assert {c.answered for c in cloud.calls} == {"ok"}


@pytest.mark.parametrize("action", ["cvm:DescribeInstances", "cvm:DescribeHpcClusters", "vpc:DescribeSecurityGroups",
                                    "vpc:DescribeSubnets", "vpc:DescribeVpcs", "cvm:DescribeKeyPairs"])
def test_the_leftover_search_without_one_action_stops_naming_it(action: str, cloud: FakeTencentCloud, endpoint: str,
                                                                sleeps: Sleeps) -> None:
    cloud.policies[SECRET_ID] = [without(shipped(UP_DOWN["tencentcloud"]), action)]
    populate(cloud)
    with pytest.raises(ApiError) as caught:
        find_leftovers(make_api(endpoint, sleeps), CLUSTER, CLUSTER_ID)
    assert caught.value.code == "AuthFailure.UnauthorizedOperation"
    assert f"the key may not call {action.split(':')[1]} (CAM)" in caught.value.message
