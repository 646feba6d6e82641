"""Clusters on this machine and in the fake clouds, for the reap and cost tests.

The state is what the Automation API really leaves in the gpuctl home (the stack's config in the
workspace, the checkpoint in the file backend); the clouds are the fakes of tests/fake_cloud on
loopback, with real signatures. Three clusters and two untagged instances:

- old-hcc (Tencent, ap-shanghai): in the state, expired at 2026-01-01T08:00:00Z, 2 x GT4.4XLARGE96;
- live-erdma (Alibaba, cn-wulanchabu): in the state, expires 2099-01-01T00:00:00Z;
- lost (Tencent, ap-guangzhou): tagged by gpuctl, in no state, expired: orphaned;
- an untagged Tencent instance and an untagged Alibaba instance, in the same regions: never touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud import alibaba, tencent
from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, TAG_EXPIRES, TAG_MANAGED_BY, TAG_OWNER

REPO = Path(__file__).resolve().parents[2]
TC_ID = "AKIDgpuctlREAP000000000000000000001"
TC_KEY = "gpuctlFakeReapSecretKey000000000001"
ALI_ID = "LTAI5tGpuctlReapKey001"
ALI_SECRET = "gpuctlFakeAlibabaReapSecret00001"
CREDENTIAL_ENVS = ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN", "ALICLOUD_PROFILE",
                   "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
                   "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SECURITY_TOKEN",
                   "GPUCTL_PULUMI_BACKEND")


def tencent_instance(id_: str, zone: str, tags: dict[str, str], itype: str = "GT4.4XLARGE96") -> dict[str, Any]:
    return {"InstanceId": id_, "InstanceName": id_, "InstanceType": itype, "Placement": {"Zone": zone},
            "CreatedTime": "2026-01-01T00:00:00Z", "InstanceState": "RUNNING",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


def alibaba_instance(id_: str, region: str, tags: dict[str, str]) -> dict[str, Any]:
    return {"InstanceId": id_, "InstanceName": id_, "InstanceType": "ecs.ebmgn7ex.32xlarge", "RegionId": region,
            "ZoneId": f"{region}-c", "CreationTime": "2026-01-01T00:00Z", "Status": "Running",
            "Tags": {"Tag": [{"TagKey": k, "TagValue": v} for k, v in tags.items()]}}


def gpuctl_tags(cluster: str, cluster_id: str | None, expires: str, owner: str = "infra-team") -> dict[str, str]:
    tags = {TAG_CLUSTER: cluster, TAG_OWNER: owner, TAG_EXPIRES: expires, TAG_MANAGED_BY: "gpuctl",
            "project": "llm"}
    if cluster_id is not None:
        tags[TAG_CLUSTER_ID] = cluster_id
    return tags


def write_stack(home: Path, name: str, provider: str, region: str, cluster_id: str, *, created: str,
                expires: str | None, types: list[str]) -> Path:
    """The files `gpuctl up` leaves through the Automation API: Pulumi.<stack>.yaml in the workspace
    and the checkpoint in the default file backend (no checkpoint when `expires` is None)."""
    folder = home / "clusters" / name
    (folder / "pulumi-project").mkdir(parents=True)
    (folder / "pulumi-project" / f"Pulumi.{name}.yaml").write_text(
        "config:\n"
        f"  {provider}:region: {region}\n"
        f"  gpuctl:clusterId: {cluster_id}\n"
        f"  gpuctl:createdAt: \"{created}\"\n"
        "  gpuctl:owner: infra-team\n")
    if expires is not None:
        project = f"gpuctl-{provider}"
        stacks = folder / "pulumi" / ".pulumi" / "stacks" / project
        stacks.mkdir(parents=True)
        root = {"urn": f"urn:pulumi:{name}::{project}::pulumi:pulumi:Stack::{project}-{name}", "custom": False,
                "type": "pulumi:pulumi:Stack",
                "outputs": {"cluster": name, "clusterId": cluster_id, "createdAt": created, "expiresAt": expires,
                            "nodes": [{"name": f"{name}-gpu-{i}", "instance_type": t} for i, t in enumerate(types)]}}
        instances = [{"urn": f"urn:pulumi:{name}::{project}::x:index/instance:Instance::{name}-gpu-{i}",
                      "custom": True, "type": "x:index/instance:Instance", "id": f"ins-{i}"}
                     for i in range(len(types))]
        checkpoint = {"version": 3, "checkpoint": {"stack": f"organization/{project}/{name}",
                                                   "latest": {"resources": [root, *instances]}}}
        (stacks / f"{name}.json").write_text(json.dumps(checkpoint))
    return folder


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
                 *CREDENTIAL_ENVS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TENCENTCLOUD_SHARED_CREDENTIALS_DIR", str(tmp_path / "no-tccli"))
    monkeypatch.chdir(REPO)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    write_stack(home, "old-hcc", "tencentcloud", "ap-shanghai", "aaaaaaaaaaaa", created="2026-01-01T00:00:00Z",
                expires="2026-01-01T08:00:00Z", types=["GT4.4XLARGE96", "GT4.4XLARGE96"])
    write_stack(home, "live-erdma", "alicloud", "cn-wulanchabu", "bbbbbbbbbbbb", created="2026-01-01T00:00:00Z",
                expires="2099-01-01T00:00:00Z", types=["ecs.ebmgn7ex.32xlarge"])
    return home


@pytest.fixture
def tencent_cloud() -> tencent.FakeTencentCloud:
    return tencent.FakeTencentCloud(keys={TC_ID: TC_KEY}, regional=True, regions=["ap-guangzhou", "ap-shanghai"],
                                    instances=[
        tencent_instance("ins-old0", "ap-shanghai-5", gpuctl_tags("old-hcc", "aaaaaaaaaaaa", "2026-01-01T08:00:00Z")),
        tencent_instance("ins-old1", "ap-shanghai-5", gpuctl_tags("old-hcc", "aaaaaaaaaaaa", "2026-01-01T08:00:00Z")),
        tencent_instance("ins-lost", "ap-guangzhou-3", gpuctl_tags("lost", "cccccccccccc", "2026-02-01T00:00:00Z")),
        tencent_instance("ins-untagged", "ap-shanghai-5", {"project": "llm"}),
    ])


@pytest.fixture
def alibaba_cloud() -> alibaba.FakeAlibabaCloud:
    return alibaba.FakeAlibabaCloud(keys={ALI_ID: ALI_SECRET}, regions=["cn-hangzhou", "cn-wulanchabu"], instances=[
        alibaba_instance("i-live0", "cn-wulanchabu", gpuctl_tags("live-erdma", "bbbbbbbbbbbb", "2099-01-01T00:00:00Z")),
        alibaba_instance("i-untagged", "cn-wulanchabu", {"project": "llm"}),
    ])


@pytest.fixture
def clouds(tencent_cloud: tencent.FakeTencentCloud, alibaba_cloud: alibaba.FakeAlibabaCloud,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[tencent.FakeTencentCloud, alibaba.FakeAlibabaCloud]]:
    with tencent.serve(tencent_cloud) as tc_url, alibaba.serve(alibaba_cloud) as ali_url:
        monkeypatch.setenv("GPUCTL_TENCENTCLOUD_ENDPOINT", tc_url)
        monkeypatch.setenv("GPUCTL_ALICLOUD_ENDPOINT", ali_url)
        yield tencent_cloud, alibaba_cloud


@pytest.fixture
def login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", TC_ID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", TC_KEY)
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", ALI_ID)
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", ALI_SECRET)


class RecordingDriver:
    """The provider driver `down` goes through, recording what it was asked to remove."""

    def __init__(self, provider: str, downs: list[tuple[str, str, str | None]]) -> None:
        self.name = provider
        self.downs = downs

    def down(self, spec: Any, progress: Callable[[str], None], *, delete_storage: bool = False) -> bool:
        self.downs.append((spec.provider, spec.name, spec.region))
        progress(f"pretend pulumi destroy of {spec.name}")
        return True


@pytest.fixture
def downs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str | None]]:
    """Every driver `down` call, as (provider, cluster, region); no Pulumi CLI runs."""
    from toolkit.providers import registry

    calls: list[tuple[str, str, str | None]] = []
    monkeypatch.setattr(registry, "get_driver", lambda provider, backend_url=None: RecordingDriver(provider, calls))
    return calls
