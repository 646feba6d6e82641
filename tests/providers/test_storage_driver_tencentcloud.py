"""The Tencent storage stack beside the cluster's, with the Automation layer faked: where the spec
creates a CFS, the storage stack owns the VPC and subnet, `up` brings it up first and the cluster joins
its network by id; `down` destroys the cluster's stack only and leaves the network with the kept CFS;
`down --delete-storage` lifts protect and removes both (tests/providers/test_storage_driver.py is the
same flow on Alibaba)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.providers.pulumi_cli import write_fake_cli
from tests.providers.test_alicloud_driver import FakeAutomation, StackRecord
from toolkit.errors import ProviderError, UsageError
from toolkit.providers.pulumi.pins import StackPins
from toolkit.providers.tencentcloud.args import GpuClusterArgs, NetworkIds
from toolkit.providers.tencentcloud.driver import PLUGIN, TencentcloudDriver, storage_network
from toolkit.providers.tencentcloud.storage import StorageArgs
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec, StorageVolume

pytestmark = pytest.mark.unit

SPEC = Path(__file__).resolve().parent / "specs" / "tencent-monthly.yaml"
CLUSTER = "t-tc-monthly"
STORAGE = f"{CLUSTER}_storage"
OUR_ID = "5e1f0c2a9b3d"
DATA = {"name": "data", "kind": "nas", "mount_path": "/mnt/data"}
SCRATCH = {"name": "scratch", "kind": "nas", "mount_path": "/scratch", "keep_on_down": False}
CKPT = {"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"}
VPC = "tencentcloud:Vpc/instance:Instance"
SUBNET = "tencentcloud:Subnet/instance:Instance"
FILE_SYSTEM = "tencentcloud:Cfs/fileSystem:FileSystem"
NODE = {"name": "t-tc-monthly-box-0", "pool": "box", "instance_id": "ins-0example", "instance_type": "GN7.2XLARGE32",
        "private_ip": "10.0.0.7", "public_ip": "", "fabric_interfaces": []}


def with_storage(*volumes: dict[str, Any]) -> ClusterSpec:
    return load_spec(SPEC).model_copy(update={"storage": [StorageVolume.model_validate(v) for v in volumes]})


@pytest.fixture
def fake_tencent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `pulumi` on PATH (asked only its version), the Tencent plugin in the cache, credentials, a private home;
    the SDK's calls (tag search, stock) answered empty: tests/providers/test_tencentcloud_driver.py
    holds them against the fake API."""
    bin_dir = tmp_path / "bin"
    write_fake_cli(bin_dir)  # answers `pulumi version` only: the Automation layer is faked
    monkeypatch.setenv("PATH", str(bin_dir))
    home = tmp_path / "pulumi-home"
    (home / "plugins" / f"resource-{PLUGIN.name}-v{PLUGIN.version or metadata.version(PLUGIN.package)}").mkdir(
        parents=True)
    monkeypatch.setenv("PULUMI_HOME", str(home))
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDgpuctlTEST0000000000000000000001")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "gpuctlFakeSecretKey0000000000000001")
    monkeypatch.delenv("GPUCTL_PULUMI_BACKEND", raising=False)
    monkeypatch.setattr(TencentcloudDriver, "cloud_leftovers", lambda self, spec, region, cluster_id: [])
    monkeypatch.setattr(TencentcloudDriver, "first_create_checks", lambda self, spec, progress: None)


class TencentAutomation(FakeAutomation):
    """The faked stacks; the storage program records its StorageArgs and leaves in the state what it
    would create (the network only where a CFS is created), the cluster program its GpuClusterArgs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(monkeypatch, cluster_exists=False)
        self.storage_args: list[StorageArgs] = []
        self.cluster_args: list[GpuClusterArgs] = []
        self.exports: dict[str, Any] = {}
        monkeypatch.setattr("toolkit.providers.tencentcloud.storage.storage_program", self.storage_args.append)
        monkeypatch.setattr("toolkit.providers.tencentcloud.component.cluster_program",
                            lambda spec, args: self.cluster_args.append(args))
        monkeypatch.setattr(pulumi, "export", self.exports.__setitem__)

    def run_cluster(self, record: StackRecord, program: Any) -> dict[str, Any]:
        program()
        if record is self.stacks.get(STORAGE):
            record.state, record.outputs = storage_state(self.storage_args[-1])
        else:
            args = self.cluster_args[-1]
            record.state = [{"type": "tencentcloud:Instance/instance:Instance", "urn": f"urn:...::{CLUSTER}-box-0",
                             "custom": True, "id": "ins-0example", "outputs": {"tags": args.tags}}]
            record.outputs = {"cluster": CLUSTER, "clusterId": args.cluster_id, "fabric": "tcp", "mtu": 1500,
                              "nodes": [NODE], **self.exports}
        return record.outputs


def storage_state(args: StorageArgs) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What the storage program leaves in its stack: state resources and outputs."""
    state: list[dict[str, Any]] = []
    outputs: dict[str, Any] = {"volumes": [
        {"name": v.name, "kind": v.kind, "mountPath": v.mount_path}
        | ({"mountSource": "10.0.0.17:/", "nfs3Path": "/abcd1234"} if v.kind == "nas"
           else {"bucket": f"{v.name}-1250000000", "endpoint": "cos.ap-guangzhou.myqcloud.com"})
        for v in args.volumes]}
    if args.creates_file_system:
        state += [{"type": VPC, "urn": f"urn:...::{CLUSTER}-vpc", "custom": True, "id": "vpc-st0rage1",
                   "protect": args.protect_network()},
                  {"type": SUBNET, "urn": f"urn:...::{CLUSTER}-subnet", "custom": True, "id": "subnet-st0rage1",
                   "protect": args.protect_network()}]
        outputs.update(vpcId="vpc-st0rage1", subnetId="subnet-st0rage1")
    state += [{"type": FILE_SYSTEM, "urn": f"urn:...::{CLUSTER}-{v.name}-nas", "custom": True,
               "id": f"cfs-{v.name}", "protect": args.protect(v)} for v in args.file_systems]
    return state, outputs


def stored(args: StorageArgs) -> list[dict[str, Any]]:
    return storage_state(args)[0]


def test_up_builds_the_storage_network_first_and_the_cluster_joins_it(
    fake_tencent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = TencentAutomation(monkeypatch)
    outputs = TencentcloudDriver().up(with_storage(DATA, CKPT), lambda _line: None)
    assert [step for step in automation.steps() if step[0] == "up"] == [("up", STORAGE), ("up", CLUSTER)]
    [args] = automation.storage_args
    assert (args.creates_file_system, args.protect_network(), args.vpc_cidr) == (True, True, "10.42.0.0/16")
    assert [r["id"] for r in automation.stacks[STORAGE].state] == ["vpc-st0rage1", "subnet-st0rage1", "cfs-data"]
    # The cluster program ran once, with the storage stack's network, and exported the volumes.
    [cluster] = automation.cluster_args
    assert cluster.existing_network == NetworkIds(vpc_id="vpc-st0rage1", subnet_id="subnet-st0rage1")
    assert [v["name"] for v in automation.exports["volumes"]] == ["data", "ckpt"]
    assert [(v.name, v.source, v.bucket) for v in outputs.volumes] == [
        ("data", "10.0.0.17:/abcd1234", None), ("ckpt", None, "ckpt-1250000000")]


def test_without_a_created_cfs_the_cluster_keeps_its_own_network(
    fake_tencent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = TencentAutomation(monkeypatch)
    TencentcloudDriver().up(with_storage(CKPT, {"name": "old", "kind": "nas", "mount_path": "/mnt/old",
                                                "existing": "cfs-3pkq3pgr"}), lambda _line: None)
    [args] = automation.storage_args
    assert args.creates_file_system is False
    assert automation.stacks[STORAGE].state == []
    [cluster] = automation.cluster_args
    assert cluster.existing_network is None


def test_down_destroys_the_cluster_and_never_the_storage_stack_or_its_network(
    fake_tencent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = TencentAutomation(monkeypatch)
    spec = with_storage(DATA, CKPT)
    automation.stacks[CLUSTER] = StackRecord(config={"gpuctl:clusterId": OUR_ID}, state=[
        {"type": "tencentcloud:Instance/instance:Instance", "urn": "u", "custom": True, "id": "ins-0example"}])
    kept = stored(StorageArgs.from_spec(spec, cluster_id=OUR_ID))
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": OUR_ID}, state=list(kept))
    lines: list[str] = []
    assert TencentcloudDriver().down(spec, lines.append) is True
    assert automation.steps() == [("select_stack", CLUSTER), ("refresh", CLUSTER), ("destroy", CLUSTER),
                                  ("remove_stack", (CLUSTER, False)), ("select_stack", STORAGE)]
    assert CLUSTER not in automation.stacks
    assert automation.stacks[STORAGE].state == kept  # VPC, subnet, CFS: untouched
    assert [(r["id"], r["protect"]) for r in kept] == [("vpc-st0rage1", True), ("subnet-st0rage1", True),
                                                       ("cfs-data", True)]
    assert any(line.startswith("kept (keep_on_down): data (nas, /mnt/data), ckpt (object, /mnt/ckpt)")
               for line in lines)


def test_down_with_the_cfs_not_kept_deletes_it_and_its_network_after_the_cluster(
    fake_tencent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = TencentAutomation(monkeypatch)
    spec = with_storage(SCRATCH, CKPT)
    automation.stacks[CLUSTER] = StackRecord(config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": OUR_ID},
                                             state=stored(StorageArgs.from_spec(spec, cluster_id=OUR_ID)))
    TencentcloudDriver().down(spec, lambda _line: None)
    steps = automation.steps()
    assert steps.index(("destroy", CLUSTER)) < steps.index(("up", STORAGE))  # the nodes leave the subnet first
    assert ("destroy", STORAGE) not in steps
    [args] = automation.storage_args
    assert [v.name for v in args.volumes] == ["ckpt"]
    assert automation.stacks[STORAGE].state == []  # no CFS left, so no network either


def test_delete_storage_lifts_protect_then_destroys_the_network_with_the_cfs(
    fake_tencent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = TencentAutomation(monkeypatch)
    spec = with_storage(DATA)
    automation.stacks[CLUSTER] = StackRecord(config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": OUR_ID},
                                             state=stored(StorageArgs.from_spec(spec, cluster_id=OUR_ID)))
    TencentcloudDriver().down(spec, lambda _line: None, delete_storage=True)
    steps = automation.steps()
    assert steps.index(("remove_stack", (CLUSTER, False))) < steps.index(("up", STORAGE))
    assert [s for s in steps if STORAGE in str(s[1])] == [
        ("select_stack", STORAGE), ("refresh", STORAGE), ("up", STORAGE), ("destroy", STORAGE),
        ("remove_stack", (STORAGE, False))]
    [args] = automation.storage_args
    assert (args.unprotect, args.protect_network()) == (True, False)
    assert STORAGE not in automation.stacks


def test_a_cluster_program_built_before_the_storage_stack_is_up_refuses_to_run(fake_tencent: None) -> None:
    """`up` builds the program once before the storage stack is up, to refuse bad input early; run like
    that, the cluster would make a second VPC beside the storage stack's."""
    from datetime import UTC, datetime

    pins = StackPins(cluster_id=OUR_ID, created_at=datetime(2026, 11, 29, 9, 15, tzinfo=UTC), owner="tester")
    program = TencentcloudDriver().program(with_storage(DATA), pins)
    with pytest.raises(ProviderError, match="run before its storage stack was up"):
        program()


def test_a_storage_stack_without_the_network_ids_is_refused_with_the_way_out() -> None:
    with pytest.raises(ProviderError, match=f"storage stack {STORAGE} exports no vpcId/subnetId") as caught:
        storage_network(with_storage(DATA), {"volumes": [], "vpcId": "vpc-st0rage1"})
    assert "up" in (caught.value.hint or "")
    assert storage_network(with_storage(DATA), {"vpcId": "vpc-a", "subnetId": "subnet-b"}) == NetworkIds(
        vpc_id="vpc-a", subnet_id="subnet-b")


def test_a_cluster_up_with_its_own_vpc_is_not_moved_to_a_new_cfs_network(
    fake_tencent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adding a created CFS to the spec of a running cluster would move it into the storage stack's
    network, replacing every node: refused before any stack runs, with the way through."""
    automation = TencentAutomation(monkeypatch)
    automation.stacks[CLUSTER] = StackRecord(config={"gpuctl:clusterId": OUR_ID}, state=[
        {"type": VPC, "urn": f"urn:...::{CLUSTER}-vpc", "custom": True, "id": "vpc-c1uster1"}])
    with pytest.raises(UsageError, match=f"cluster {CLUSTER} is up with a VPC of its own, and storage data") as caught:
        TencentcloudDriver().up(with_storage(DATA), lambda _line: None)
    assert "down" in (caught.value.hint or "")
    assert not [step for step in automation.steps() if step[0] in ("up", "destroy", "set_config")]
    assert STORAGE not in automation.stacks
    # Without a created CFS the same cluster goes on as before (its storage stack holds only volumes).
    TencentcloudDriver().up(with_storage(CKPT), lambda _line: None)
    assert automation.cluster_args[-1].existing_network is None
