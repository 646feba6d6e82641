"""`down` after the cloud already released a node (the TTL's timed release, a spot reclaim, a monthly
instance gone at its expiry, the console): it refreshes first, so the destroy never asks the cloud to
delete what is gone, and ends with nothing left in the stack or in the cloud (issue 21, item 11).

The Automation layer is faked (tests/providers/test_alicloud_driver.py FakeAutomation); what its
stacks' refresh and destroy do to the cloud is the providers' own behaviour, modelled here from their
source (each `read` drops what its API no longer finds; each `delete` sends what it sends):

- Tencent (terraform-provider-tencentcloud v1.82.42, the version tencentcloud-iac-pulumi 0.2.3
  bridges): the instance read drops a missing instance (services/cvm/resource_tc_instance.go:1171);
  its delete sends TerminateInstances whatever the state (:2433), which answers
  InvalidInstanceId.NotFound for a released one: here the fake Tencent API's own answer
  (tests/fake_cloud/tencent.py), on loopback, and `down`'s tag search goes through the SDK to the
  same fake. A CFS read drops a missing one (services/cfs/resource_tc_cfs_file_system.go:250); its
  delete passes any error on (:375), and DeleteCfsFileSystem lists ResourceNotFound.FileSystemNotFound
  (tencentcloud-sdk-go cfs/v20190719/client.go:673, vendored in the provider).
- Alibaba (terraform-provider-alicloud v1.289.0): the instance read drops a missing instance
  (alicloud/resource_alicloud_instance.go:1303); the delete of a monthly (PrePaid, force_delete)
  instance first sends ModifyInstanceChargeType (:2659), which nothing guards against a missing
  instance, while a pay-as-you-go delete passes InvalidInstanceId.NotFound by (:2690, EcsNotFound in
  alicloud/errors.go:41).

Pulumi deletes dependents before what they depend on and stops at a failed delete: the state is in
creation order here (what a resource depends on comes first), so a failed delete keeps itself and
everything before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from pulumi.automation import CommandError
from pulumi.automation._cmd import CommandResult

from tests.fake_cloud.tencent import ApiFault, FakeTencentCloud, serve
from tests.providers.pulumi_cli import write_fake_cli
from tests.providers.test_alicloud_driver import FakeAutomation, FakeStack, StackRecord, fake_pulumi
from toolkit.errors import ProviderError
from toolkit.providers.alicloud.driver import AlicloudDriver
from toolkit.providers.tencentcloud.driver import PLUGIN, TencentcloudDriver
from toolkit.providers.tencentcloud.sdk import ENDPOINT_ENV
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec, StorageVolume

__all__ = ["fake_pulumi"]  # a fixture, imported
SPECS = Path(__file__).resolve().parent / "specs"
OUR_ID = "5e1f0c2a9b3d"
SECRET_ID = "AKIDgpuctlDOWN0000000000000000000001"
SECRET_KEY = "gpuctlFakeDownSecretKey000000000001"


# ------------------------------------------------------------------------------ the providers


class Delete(Exception):  # noqa: N818 -- what a provider's delete answered: the stack's destroy fails on it
    pass


@dataclass
class ProviderStacks:
    """Refresh and destroy of the faked stacks, as the provider behind them does them: `read(resource)`
    says whether the cloud still holds it; `delete(resource)` removes it from the cloud or raises Delete."""

    read: Callable[[dict[str, Any]], bool]
    delete: Callable[[dict[str, Any]], None]
    refresh_fails: str | None = None  # a refresh that fails itself, with this error text

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        stacks = self

        def refresh(stack: FakeStack, **_kwargs: Any) -> None:
            stack.automation.log.append(("refresh", stack.name))
            if stacks.refresh_fails is not None:
                raise CommandError(CommandResult(stdout="", stderr=f"error: {stacks.refresh_fails}\n", code=255))
            stack.record.state = [r for r in stack.record.state if stacks.read(r)]

        def destroy(stack: FakeStack, **_kwargs: Any) -> None:
            stack.automation.log.append(("destroy", stack.name))
            state = stack.record.state
            while state:
                try:
                    stacks.delete(state[-1])
                except Delete as failed:
                    name = str(state[-1]["urn"]).rsplit("::", 1)[-1]
                    raise CommandError(CommandResult(
                        stdout="", code=255,
                        stderr=f"  {state[-1]['type']} ({name}):\n    error: {failed}\n")) from None
                state.pop()

        monkeypatch.setattr(FakeStack, "refresh", refresh)
        monkeypatch.setattr(FakeStack, "destroy", destroy)


def resource(type_: str, name: str, id_: str, **inputs: Any) -> dict[str, Any]:
    return {"type": type_, "urn": f"urn:pulumi:stack::project::{type_}::{name}", "custom": True, "id": id_,
            "inputs": inputs}


# ------------------------------------------------------------------------------------ Tencent

TC_VPC = "tencentcloud:Vpc/instance:Instance"
TC_SUBNET = "tencentcloud:Subnet/instance:Instance"
TC_GROUP = "tencentcloud:Security/group:Group"
TC_RULES = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
TC_KEY = "tencentcloud:Key/pair:Pair"
TC_HPC = "tencentcloud:Cvm/hpcCluster:HpcCluster"
TC_ROLE = "tencentcloud:Cam/role:Role"
TC_INSTANCE = "tencentcloud:Instance/instance:Instance"
TC_TIMER = "tencentcloud:Cvm/actionTimer:ActionTimer"
TC_CFS = "tencentcloud:Cfs/fileSystem:FileSystem"


# The kinds the fake Tencent API lists: its list attribute and id field.
TC_LISTS = {TC_VPC: ("vpcs", "VpcId"), TC_SUBNET: ("subnets", "SubnetId"),
            TC_GROUP: ("security_groups", "SecurityGroupId"), TC_KEY: ("key_pairs", "KeyId"),
            TC_HPC: ("hpc_clusters", "HpcClusterId")}


def tc_tags(cluster: str) -> list[dict[str, str]]:
    return [{"Key": "gpuctl:cluster", "Value": cluster}, {"Key": "gpuctl:cluster-id", "Value": OUR_ID},
            {"Key": "gpuctl:owner", "Value": "tester@example.com"}]


@dataclass
class TencentProvider:
    """tencentcloud's reads and deletes against the fake Tencent API's state. CVM instances through the
    fake's own DescribeInstances / TerminateInstances handlers (the answers the loopback server gives);
    the kinds the fake has no Delete* for are removed from its lists, as their deletes would; CAM roles,
    CFS and ActionTimers, which the fake does not hold, are kept here."""

    cloud: FakeTencentCloud
    region: str
    roles: set[str] = field(default_factory=set)
    file_systems: set[str] = field(default_factory=set)
    timers: dict[str, str] = field(default_factory=dict)  # timer id -> its instance id

    def instance_exists(self, id_: str) -> bool:
        # The provider asks by InstanceIds (DescribeInstanceById); the fake filters by instance-id.
        answer = self.cloud.answer("cvm", "DescribeInstances", {"Filters": [{"Name": "instance-id", "Values": [id_]}]},
                                   self.region)
        return bool(answer["InstanceSet"])

    def read(self, item: dict[str, Any]) -> bool:
        type_, id_ = item["type"], item["id"]
        if type_ == TC_INSTANCE:
            return self.instance_exists(id_)
        if type_ == TC_TIMER:  # a timer that fired went with its instance
            return id_ in self.timers and self.instance_exists(self.timers[id_])
        if type_ == TC_RULES:
            return any(g["SecurityGroupId"] == id_ for g in self.cloud.security_groups)
        if type_ == TC_ROLE:
            return id_ in self.roles
        if type_ == TC_CFS:
            return id_ in self.file_systems
        name, key = TC_LISTS[type_]
        return any(row[key] == id_ for row in getattr(self.cloud, name))

    def delete(self, item: dict[str, Any]) -> None:
        type_, id_ = item["type"], item["id"]
        if type_ == TC_INSTANCE:
            try:
                self.cloud.answer("cvm", "TerminateInstances", {"InstanceIds": [id_]}, self.region)
                # A monthly instance goes to the recycle bin (SHUTDOWN) on the first terminate; with
                # force_delete the provider waits for that and terminates it again
                # (resource_tc_instance.go:2460 and :2583 at v1.82.42).
                if item["inputs"].get("forceDelete") and self.instance_exists(id_):
                    self.cloud.answer("cvm", "TerminateInstances", {"InstanceIds": [id_]}, self.region)
            except ApiFault as fault:
                raise Delete(f"[TencentCloudSDKError] Code={fault.code}, Message={fault.message}") from None
        elif type_ == TC_TIMER:
            # What DeleteInstancesActionTimer answers for a timer that already fired is not documented:
            # taken as done, so that what fails below is the instance's TerminateInstances.
            self.timers.pop(id_, None)
        elif type_ == TC_RULES:
            pass  # the rules go with their group
        elif type_ == TC_ROLE:
            self.roles.discard(id_)
        elif type_ == TC_CFS:
            if id_ not in self.file_systems:
                raise Delete("[TencentCloudSDKError] Code=ResourceNotFound.FileSystemNotFound, Message=The file "
                             f"system `{id_}` does not exist.")
            self.file_systems.discard(id_)
        else:
            name, key = TC_LISTS[type_]
            setattr(self.cloud, name, [row for row in getattr(self.cloud, name) if row[key] != id_])

    def stacks(self) -> ProviderStacks:
        return ProviderStacks(self.read, self.delete)


def tencent_cluster(cloud: FakeTencentCloud, provider: TencentProvider, spec: ClusterSpec, *,
                    hpc: bool) -> list[dict[str, Any]]:
    """The cluster in the cloud and in its stack's state (creation order): network, group, key, role,
    HPC cluster, then each node and its ActionTimer."""
    name, zone = spec.name, str(spec.zone)
    tags = tc_tags(name)
    cloud.vpcs.append({"VpcId": "vpc-d0wn0001", "VpcName": f"{name}-vpc", "TagSet": tags})
    cloud.subnets.append({"SubnetId": "subnet-d0wn0001", "SubnetName": f"{name}-subnet", "VpcId": "vpc-d0wn0001",
                          "Zone": zone, "TagSet": tags})
    cloud.security_groups.append({"SecurityGroupId": "sg-d0wn0001", "SecurityGroupName": f"{name}-sg",
                                  "TagSet": tags})
    cloud.key_pairs.append({"KeyId": "skey-d0wn0001", "KeyName": name.replace("-", "_"), "Tags": tags})
    provider.roles.add(f"{name}-role")
    state = [resource(TC_VPC, f"{name}-vpc", "vpc-d0wn0001"), resource(TC_SUBNET, f"{name}-subnet", "subnet-d0wn0001"),
             resource(TC_GROUP, f"{name}-sg", "sg-d0wn0001"), resource(TC_RULES, f"{name}-sg-rules", "sg-d0wn0001"),
             resource(TC_KEY, f"{name}-key", "skey-d0wn0001"), resource(TC_ROLE, f"{name}-role", f"{name}-role")]
    if hpc:
        cloud.hpc_clusters.append({"HpcClusterId": "hpc-d0wn0001", "Name": f"{name}-{OUR_ID}", "Zone": zone,
                                   "Remark": f"gpuctl cluster {name} ({OUR_ID}): RDMA between the nodes"})
        state.append(resource(TC_HPC, f"{name}-hpc", "hpc-d0wn0001"))
    pool = spec.node_pools[0]
    charge = {"monthly": "PREPAID", "spot": "SPOTPAID"}.get(pool.billing.mode, "POSTPAID_BY_HOUR")
    for index in range(pool.count):
        id_ = f"ins-d0wn000{index}"
        cloud.instances.append({"InstanceId": id_, "InstanceName": f"{name}-{pool.name}-{index}",
                                "InstanceType": pool.instance_type, "Placement": {"Zone": zone},
                                "InstanceState": "RUNNING", "InstanceChargeType": charge, "Tags": tags})
        provider.timers[f"{id_}:timer"] = id_
        state += [resource(TC_INSTANCE, f"{name}-{pool.name}-{index}", id_, instanceChargeType=charge,
                           forceDelete=charge == "PREPAID"),
                  resource(TC_TIMER, f"{name}-{pool.name}-{index}-ttl", f"{id_}:timer")]
    return state


def released(cloud: FakeTencentCloud, *ids: str) -> None:
    """The cloud took these instances back (their ActionTimer fired, a spot reclaim, an expiry)."""
    cloud.instances = [i for i in cloud.instances if i["InstanceId"] not in ids]


def left_in(cloud: FakeTencentCloud) -> list[str]:
    return [row[key] for name, key in TC_LISTS.values() for row in getattr(cloud, name)] + \
        [i["InstanceId"] for i in cloud.instances]


@pytest.fixture
def tencent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTencentCloud]:
    """The fake Tencent API on loopback (the tag search of `down` goes there through the SDK), a Pulumi
    CLI on PATH that answers its version only, the plugin in the cache, credentials, a private home."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
                 "GPUCTL_PULUMI_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    write_fake_cli(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    plugins = tmp_path / "pulumi-home" / "plugins"
    (plugins / f"resource-{PLUGIN.name}-v{PLUGIN.version or metadata.version(PLUGIN.package)}").mkdir(parents=True)
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "pulumi-home"))
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)
    fake = FakeTencentCloud(keys={SECRET_ID: SECRET_KEY})
    with serve(fake) as url:
        monkeypatch.setenv(ENDPOINT_ENV, url)
        yield fake


def tencent_down(cloud: FakeTencentCloud, monkeypatch: pytest.MonkeyPatch, spec_file: str, *, hpc: bool = False,
                 gone: int = 1) -> tuple[ClusterSpec, FakeAutomation, TencentProvider, list[str]]:
    """A Tencent cluster up in the fake cloud and its stack, `gone` of its nodes already released."""
    spec = load_spec(SPECS / spec_file)
    provider = TencentProvider(cloud, str(spec.region))
    automation = FakeAutomation(monkeypatch, cluster_exists=False)
    automation.stacks[spec.name] = StackRecord(config={"gpuctl:clusterId": OUR_ID},
                                               state=tencent_cluster(cloud, provider, spec, hpc=hpc))
    released(cloud, *[f"ins-d0wn000{index}" for index in range(gone)])
    provider.stacks().install(monkeypatch)
    return spec, automation, provider, []


@pytest.mark.fake_cloud
def test_the_fake_refuses_what_tencent_refuses_a_destroy_without_refresh_leaves_the_network(
    tencent: FakeTencentCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative, what `down` did before: destroy straight from the last state."""
    spec, automation, _provider, _lines = tencent_down(tencent, monkeypatch, "tencent-spot-catalog-price.yaml")
    stack = automation.select_stack(spec.name, project_name="gpuctl-tencentcloud", program=None, opts=None)
    with pytest.raises(CommandError, match=r"Code=InvalidInstanceId\.NotFound, Message=The instance `ins-d0wn0000` "
                                           r"does not exist\."):
        stack.destroy()
    # Nodes 1 and 2 went, and node 0's timer (dependents first); node 0's delete failed: it and all it
    # depends on stay.
    assert [r["id"] for r in automation.stacks[spec.name].state] == [
        "vpc-d0wn0001", "subnet-d0wn0001", "sg-d0wn0001", "sg-d0wn0001", "skey-d0wn0001", "t-tc-spot-role",
        "ins-d0wn0000"]
    assert left_in(tencent) == ["vpc-d0wn0001", "subnet-d0wn0001", "sg-d0wn0001", "skey-d0wn0001"]


@pytest.mark.fake_cloud
@pytest.mark.parametrize(("spec_file", "hpc", "gone"), [
    ("tencent-spot-catalog-price.yaml", False, 1),  # a spot node reclaimed, two still running
    ("tencent-spot-catalog-price.yaml", True, 3),  # every node's ActionTimer fired at the TTL
    ("tencent-monthly.yaml", False, 1),  # a monthly node released at its expiry (force_delete in the state)
])
def test_tencent_down_after_the_cloud_released_a_node_ends_with_nothing_left(
    tencent: FakeTencentCloud, monkeypatch: pytest.MonkeyPatch, spec_file: str, hpc: bool, gone: int
) -> None:
    spec, automation, provider, lines = tencent_down(tencent, monkeypatch, spec_file, hpc=hpc, gone=gone)
    assert TencentcloudDriver().down(spec, lines.append) is True
    steps = automation.steps()
    assert steps == [("select_stack", spec.name), ("refresh", spec.name), ("destroy", spec.name),
                     ("remove_stack", (spec.name, False))]
    assert spec.name not in automation.stacks  # its state was empty, so it was removed
    assert left_in(tencent) == []
    assert provider.roles == set()
    # The tag search ran through the SDK against the fake, over HTTP, and found nothing.
    assert {"DescribeInstances", "DescribeVpcs"} <= {c.action for c in tencent.calls}
    assert {c.answered for c in tencent.calls} == {"ok"}
    assert f"pulumi refresh: stack {spec.name} (what the cloud already released leaves the state)" in lines
    assert lines[-1] == f"verified: no resource of {spec.name} in the stack or tagged in {spec.region}; stack removed"


@pytest.mark.fake_cloud
def test_a_refresh_that_fails_does_not_stop_the_destroy(
    tencent: FakeTencentCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, automation, provider, lines = tencent_down(tencent, monkeypatch, "tencent-monthly.yaml", gone=0)
    failing = ProviderStacks(provider.read, provider.delete, refresh_fails="RequestLimitExceeded: too many requests")
    failing.install(monkeypatch)
    assert TencentcloudDriver().down(spec, lines.append) is True
    assert [step for step, _ in automation.steps()] == ["select_stack", "refresh", "destroy", "remove_stack"]
    assert ("pulumi refresh of t-tc-monthly failed, so the destroy works from the last state: pulumi: "
            "RequestLimitExceeded: too many requests") in lines
    assert left_in(tencent) == []


@pytest.mark.fake_cloud
def test_a_failed_refresh_and_a_released_node_still_fail_with_the_destroys_own_error(
    tencent: FakeTencentCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, automation, provider, lines = tencent_down(tencent, monkeypatch, "tencent-monthly.yaml", gone=1)
    ProviderStacks(provider.read, provider.delete, refresh_fails="RequestLimitExceeded").install(monkeypatch)
    with pytest.raises(ProviderError, match=r"InvalidInstanceId\.NotFound"):
        TencentcloudDriver().down(spec, lines.append)
    assert spec.name in automation.stacks  # kept: it still holds what was not deleted
    assert "pulumi refresh of t-tc-monthly failed, so the destroy works from the last state: pulumi: " \
           "RequestLimitExceeded" in lines


@pytest.mark.fake_cloud
def test_delete_storage_after_a_cfs_was_removed_by_hand_ends_with_nothing_left(
    tencent: FakeTencentCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The storage stack is refreshed before its delete too: a CFS removed in the console would
    otherwise fail DeleteCfsFileSystem and keep its VPC and subnet."""
    spec, automation, provider, lines = tencent_down(tencent, monkeypatch, "tencent-monthly.yaml", gone=0)
    spec = spec.model_copy(update={"storage": [StorageVolume.model_validate(
        {"name": "data", "kind": "nas", "mount_path": "/mnt/data"})]})
    storage = f"{spec.name}_storage"
    keep = [{"Key": "gpuctl:keep-on-down", "Value": "true"}]
    tencent.vpcs.append({"VpcId": "vpc-st0rage1", "VpcName": f"{spec.name}-vpc", "TagSet": tc_tags(spec.name) + keep})
    tencent.subnets.append({"SubnetId": "subnet-st0rage1", "SubnetName": f"{spec.name}-subnet",
                            "VpcId": "vpc-st0rage1", "Zone": str(spec.zone), "TagSet": tc_tags(spec.name) + keep})
    automation.stacks[storage] = StackRecord(config={"gpuctl:clusterId": OUR_ID}, state=[
        resource(TC_VPC, f"{spec.name}-vpc", "vpc-st0rage1"), resource(TC_SUBNET, f"{spec.name}-subnet",
                                                                       "subnet-st0rage1"),
        resource(TC_CFS, f"{spec.name}-data-nas", "cfs-d0wn0001")])
    monkeypatch.setattr("toolkit.providers.tencentcloud.storage.storage_program", lambda args: None)
    monkeypatch.setattr(automation, "run_cluster", lambda record, program: {})  # the unprotect `up`
    assert provider.file_systems == set()  # removed in the console
    TencentcloudDriver().down(spec, lines.append, delete_storage=True)
    assert [s for s in automation.steps() if storage in str(s[1])] == [
        ("select_stack", storage), ("refresh", storage), ("up", storage), ("destroy", storage),
        ("remove_stack", (storage, False))]
    assert left_in(tencent) == []
    assert lines[-1] == f"storage stack {storage} destroyed and removed"


# ------------------------------------------------------------------------------------ Alibaba

ALI_INSTANCE = "alicloud:ecs/instance:Instance"
ALI_KINDS = {"alicloud:vpc/network:Network": "vpcs", "alicloud:vpc/switch:Switch": "vswitches",
             "alicloud:ecs/securityGroup:SecurityGroup": "securityGroups", "alicloud:ecs/keyPair:KeyPair": "keyPairs",
             ALI_INSTANCE: "instances"}


@dataclass
class AlibabaProvider:
    """alicloud's reads and deletes against the tagged resources FakeAutomation's tag search answers from."""

    automation: FakeAutomation

    def held(self, id_: str) -> bool:
        return any(r["id"] == id_ for r in self.automation.cloud)

    def read(self, item: dict[str, Any]) -> bool:
        return self.held(item["id"])

    def delete(self, item: dict[str, Any]) -> None:
        if not self.held(item["id"]):
            if item["type"] == ALI_INSTANCE and item["inputs"].get("instanceChargeType") == "PrePaid":
                # ModifyInstanceChargeType first, to PostPaid, unguarded (resource_alicloud_instance.go:2659)
                raise Delete(f"[SDK alibaba-cloud-sdk-go] ModifyInstanceChargeType: InvalidInstanceId.NotFound: The "
                             f"specified InstanceId does not exist. ({item['id']})")
            return  # a pay-as-you-go instance's delete passes NotFound by; the other kinds are not modelled further
        self.automation.cloud = [r for r in self.automation.cloud if r["id"] != item["id"]]


def alibaba_cluster(automation: FakeAutomation, spec: ClusterSpec) -> list[dict[str, Any]]:
    tags = {"gpuctl:cluster": spec.name, "gpuctl:cluster-id": OUR_ID, "gpuctl:owner": "tester@example.com"}
    charge = "PrePaid" if spec.node_pools[0].billing.mode == "monthly" else "PostPaid"
    state = [resource("alicloud:vpc/network:Network", f"{spec.name}-vpc", "vpc-d0wn0001"),
             resource("alicloud:vpc/switch:Switch", f"{spec.name}-vsw", "vsw-d0wn0001"),
             resource("alicloud:ecs/securityGroup:SecurityGroup", f"{spec.name}-sg", "sg-d0wn0001"),
             resource("alicloud:ecs/keyPair:KeyPair", f"{spec.name}-key", "kp-d0wn0001"),
             resource(ALI_INSTANCE, f"{spec.name}-box-0", "i-d0wn0000", instanceChargeType=charge,
                      forceDelete=charge == "PrePaid")]
    automation.cloud = [{"kind": ALI_KINDS[r["type"]], "id": r["id"], "tags": tags} for r in state]
    return state


@pytest.mark.unit
@pytest.mark.parametrize(("spec_file", "cluster", "region", "refresh_needed"), [
    # PrePaid: the delete's ModifyInstanceChargeType on a released instance fails without the refresh
    ("tcp-monthly.yaml", "t-tcp-monthly", "cn-hangzhou", True),
    # PostPaid (spot): the delete passes NotFound by; the refresh changes nothing that matters
    ("erdma-spot.yaml", "t-erdma-spot", "cn-wulanchabu", False),
])
def test_alibaba_down_after_the_cloud_released_a_node_ends_with_nothing_left(
    fake_pulumi: None, monkeypatch: pytest.MonkeyPatch, spec_file: str, cluster: str, region: str,
    refresh_needed: bool
) -> None:
    spec = load_spec(SPECS / spec_file)
    check = f"{cluster}_leftovers"
    # FakeAutomation answers the tag search on the throwaway stack of the name it is told.
    monkeypatch.setattr("tests.providers.test_alicloud_driver.CHECK_STACK", check)
    automation = FakeAutomation(monkeypatch, cluster_exists=False)
    state = alibaba_cluster(automation, spec)
    automation.stacks[cluster] = StackRecord(config={"gpuctl:clusterId": OUR_ID}, state=[dict(r) for r in state])
    automation.cloud = [r for r in automation.cloud if r["id"] != "i-d0wn0000"]  # released
    provider = AlibabaProvider(automation)
    ProviderStacks(provider.read, provider.delete).install(monkeypatch)
    if refresh_needed:  # the negative, what `down` did before: the destroy alone fails and keeps the rest
        with pytest.raises(CommandError, match=r"ModifyInstanceChargeType: InvalidInstanceId\.NotFound"):
            FakeStack(cluster, None, None, automation).destroy()
        assert [r["id"] for r in automation.stacks[cluster].state] == [
            "vpc-d0wn0001", "vsw-d0wn0001", "sg-d0wn0001", "kp-d0wn0001", "i-d0wn0000"]
        assert [r["id"] for r in automation.cloud] == ["vpc-d0wn0001", "vsw-d0wn0001", "sg-d0wn0001", "kp-d0wn0001"]
        automation.log.clear()
    lines: list[str] = []
    assert AlicloudDriver().down(spec, lines.append) is True
    assert automation.steps() == [
        ("select_stack", cluster), ("refresh", cluster), ("destroy", cluster),
        ("create_or_select_stack", check), ("set_config", (check, "alicloud:region", region)), ("up", check),
        ("remove_stack", (check, True)), ("remove_stack", (cluster, False)),
    ]
    assert automation.cloud == []
    assert cluster not in automation.stacks
