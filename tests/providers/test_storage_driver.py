"""The storage stack beside the cluster's: `up` builds it first, `down` never destroys a kept
volume, `down --delete-storage` lifts protect and removes everything. Data loss through a teardown
is the one failure issue 15 must make impossible: these tests are that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.providers.test_alicloud_driver import (
    CHECK_STEPS,
    CLUSTER,
    OUR_ID,
    FakeAutomation,
    StackRecord,
    fake_pulumi,
    spec,
)
from toolkit.errors import ProviderError
from toolkit.providers.alicloud.driver import AlicloudDriver
from toolkit.providers.alicloud.storage import StorageArgs
from toolkit.spec.models import ClusterSpec, StorageVolume

pytestmark = pytest.mark.unit
__all__ = ["fake_pulumi", "spec"]  # fixtures, imported
STORAGE = f"{CLUSTER}_storage"
DATA = {"name": "data", "kind": "nas", "mount_path": "/mnt/data"}
SCRATCH = {"name": "scratch", "kind": "object", "mount_path": "/mnt/scratch", "keep_on_down": False}


class StorageAutomation(FakeAutomation):
    """FakeAutomation plus a storage stack whose program records the StorageArgs it was given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> None:
        super().__init__(monkeypatch, **kwargs)
        self.storage_args: list[StorageArgs] = []
        self.cluster_storage: list[Any] = []
        monkeypatch.setattr("toolkit.providers.alicloud.storage.storage_program", self.storage_args.append)

    def _build(self, spec: ClusterSpec, args: Any, storage: Any = None) -> None:
        self.cluster_storage.append(storage)
        super()._build(spec, args)

    def run_cluster(self, record: StackRecord, program: Any) -> dict[str, Any]:
        if record is self.stacks.get(STORAGE):
            program()
            args = self.storage_args[-1]
            record.state = [{"type": "alicloud:nas/fileSystem:FileSystem", "urn": f"urn:...::{CLUSTER}-{v.name}",
                             "custom": True, "id": f"fs-{v.name}", "protect": args.protect(v)}
                            for v in args.volumes]
            record.outputs = {"volumes": [{"name": v.name, "kind": v.kind, "fileSystemId": f"fs-{v.name}"}
                                          for v in args.volumes]}
            return record.outputs
        return super().run_cluster(record, program)


def with_storage(spec: ClusterSpec, *volumes: dict[str, Any]) -> ClusterSpec:
    return spec.model_copy(update={"storage": [StorageVolume.model_validate(v) for v in volumes]})


def test_up_builds_the_storage_stack_first_and_hands_its_volumes_to_the_cluster(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[CLUSTER].state = [{"type": "alicloud:ecs/instance:Instance", "urn": "u", "custom": True}]
    AlicloudDriver().up(with_storage(spec, DATA), lambda _line: None)
    ups = [step for step in automation.steps() if step[0] == "up"]
    assert ups == [("up", STORAGE), ("up", CLUSTER)]
    [args] = automation.storage_args
    assert [v.name for v in args.volumes] == ["data"]
    assert args.protect(args.volumes[0]) is True
    # The storage stack pins its own id: kept volumes keep their tags while clusters come and go.
    assert automation.stacks[STORAGE].config["gpuctl:clusterId"] == OUR_ID
    assert automation.cluster_storage[-1] == [{"name": "data", "kind": "nas", "fileSystemId": "fs-data"}]


def test_down_keeps_the_kept_volumes_and_deletes_only_the_others(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": "a1b2c3d4e5f6"})
    lines: list[str] = []
    AlicloudDriver().down(with_storage(spec, DATA, SCRATCH), lines.append)
    assert automation.steps() == [
        ("select_stack", CLUSTER), ("refresh", CLUSTER), ("destroy", CLUSTER), *CHECK_STEPS,
        ("remove_stack", (CLUSTER, False)), ("select_stack", STORAGE), ("refresh", STORAGE), ("up", STORAGE),
        # Then the cloud is asked for the storage stack's buckets that should be gone (leftovers.py).
        *CHECK_STEPS,
    ]
    assert automation.storage_queries == [("t-erdma-spot", "a1b2c3d4e5f6", False)]
    # The storage stack was never destroyed, and its program held the kept volume only, protected.
    [args] = automation.storage_args
    assert [v.name for v in args.volumes] == ["data"]
    assert args.unprotect is False
    assert STORAGE in automation.stacks
    assert any(line.startswith("kept (keep_on_down): data (nas, /mnt/data); they bill until removed: `")
               and "down" in line and "--delete-storage" in line for line in lines)


def test_down_with_everything_kept_runs_nothing_on_the_storage_stack(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": "a1b2c3d4e5f6"})
    AlicloudDriver().down(with_storage(spec, DATA), lambda _line: None)
    assert [s for s in automation.steps() if s[1] in (STORAGE, (STORAGE, False), (STORAGE, True))] == [
        ("select_stack", STORAGE)]
    assert automation.storage_args == []


def test_delete_storage_lifts_protect_then_destroys_and_removes_the_storage_stack(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": "a1b2c3d4e5f6"})
    AlicloudDriver().down(with_storage(spec, DATA), lambda _line: None, delete_storage=True)
    storage_steps = [s for s in automation.steps() if STORAGE in str(s[1])]
    assert storage_steps == [("select_stack", STORAGE), ("refresh", STORAGE), ("up", STORAGE), ("destroy", STORAGE),
                             ("remove_stack", (STORAGE, False))]
    [args] = automation.storage_args
    assert args.unprotect is True
    assert args.protect(args.volumes[0]) is False
    assert STORAGE not in automation.stacks


def test_a_bucket_the_storage_stack_no_longer_holds_is_named_after_down(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted `up` (or a lost state) can leave a bucket the storage stack does not hold: the
    cloud is asked once the stack is done, by the bucket's tags (issue 21, item 4)."""
    theirs = "a1b2c3d4e5f6"
    tags = {"gpuctl:cluster": CLUSTER, "gpuctl:cluster-id": theirs, "gpuctl:keep-on-down": "false"}
    cloud = [{"kind": "buckets", "id": f"{CLUSTER}-scratch", "tags": tags},
             {"kind": "buckets", "id": f"{CLUSTER}-data", "tags": {**tags, "gpuctl:keep-on-down": "true"}}]
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID}, cloud=cloud)
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": theirs})
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver().down(with_storage(spec, DATA, SCRATCH), lambda _line: None)
    assert caught.value.message == (
        f"1 storage resource(s) tagged gpuctl:cluster={CLUSTER} and gpuctl:cluster-id={theirs} are still in "
        "cn-wulanchabu although the storage stack no longer holds them:\n    "
        f"OSS bucket {CLUSTER}-scratch: aliyun oss rm oss://{CLUSTER}-scratch -b")  # the kept one is no leftover


def test_a_spec_without_storage_never_opens_a_storage_stack(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[STORAGE] = StackRecord(config={"gpuctl:clusterId": "a1b2c3d4e5f6"})
    AlicloudDriver().down(spec, lambda _line: None)
    assert not any(STORAGE in str(step[1]) for step in automation.steps())
    assert STORAGE in automation.stacks  # an earlier spec's volumes: kept, found by --delete-storage


def test_stack_volumes_become_what_the_storage_role_mounts() -> None:
    from toolkit.providers.pulumi.outputs import volume_output

    alibaba = volume_output({"name": "data", "kind": "nas", "mountPath": "/mnt/data", "keepOnDown": True,
                             "existing": False, "fileSystemId": "31a8e48b9c", "storageType": "Performance",
                             "mountSource": "31a8e48b9c-abc12.cn-wulanchabu.nas.aliyuncs.com:/"})
    assert (alibaba.source, alibaba.nfs_version) == ("31a8e48b9c-abc12.cn-wulanchabu.nas.aliyuncs.com:/", "3")
    tencent = volume_output({"name": "data", "kind": "nas", "mountPath": "/mnt/data", "mountSource": "10.0.1.7:/",
                             "nfs3Path": "/cfs-3pkq3pgr", "fileSystemId": "cfs-3pkq3pgr"})
    assert tencent.source == "10.0.1.7:/cfs-3pkq3pgr"
    bucket = volume_output({"name": "ckpt", "kind": "object", "mountPath": "/mnt/ckpt", "bucket": "llm-ckpt-2026",
                            "endpoint": "oss-cn-wulanchabu-internal.aliyuncs.com"})
    assert (bucket.bucket, bucket.endpoint, bucket.instance_role) == (
        "llm-ckpt-2026", "oss-cn-wulanchabu-internal.aliyuncs.com", None)


@pytest.mark.parametrize("bad", [
    {"name": "data", "kind": "nas", "mountPath": "/mnt/data", "mountSource": "-oProxyCommand=x:/"},
    {"name": "data", "kind": "nas", "mountPath": "/etc", "mountSource": "fs.example:/"},
    {"name": "ckpt", "kind": "object", "mountPath": "/mnt/ckpt", "bucket": "Bad_Name", "endpoint": "e.example"},
])
def test_a_stack_volume_that_could_reach_a_mount_command_as_an_option_is_refused(bad: dict[str, Any]) -> None:
    from toolkit.errors import ProviderError
    from toolkit.providers.pulumi.outputs import volume_output

    with pytest.raises(ProviderError, match="is not usable"):
        volume_output(bad)


def test_the_hand_run_stacks_refuse_a_spec_with_storage(spec: ClusterSpec) -> None:
    from toolkit.errors import UsageError
    from toolkit.providers.pulumi.storage import refuse_storage_in_one_stack

    refuse_storage_in_one_stack(spec)  # no storage: nothing to refuse
    with pytest.raises(UsageError, match=r"has storage volumes \(data\): they live in a stack of their own "
                                         r"\(t-erdma-spot_storage\)"):
        refuse_storage_in_one_stack(with_storage(spec, DATA))
    for cloud in ("alicloud", "tencentcloud"):
        text = (Path(__file__).resolve().parents[2] / "stacks" / cloud / "__main__.py").read_text()
        assert text.index("refuse_storage_in_one_stack(spec)") < text.index("cluster_program(")
