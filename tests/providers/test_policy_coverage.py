"""The shipped policies (docs/policies/) allow every API call gpuctl's lifecycle makes, and no more.

Every example's and test spec's resource graph is built under Pulumi's mocks (cluster stacks, every
billing mode, the lifecycle role and object volumes, the storage stacks and their mounts); each
resource's calls are looked up in the action data (toolkit/providers/<cloud>/api_actions.yaml) for
every phase `up` and `down` run (create, read for the refresh, update, delete; calls whose
`gpuctl_triggers` is false are left out), with the provider's start-up calls, the invokes and the
leftover search; each is decided by toolkit.providers.policy against the policy docs/security.md
tells users to attach, on the resource the cloud authorizes it on (toolkit/providers/policy_scope.py)
with the resource's own tags as conditions. A refusal names the resource, the phase, the action and
where the provider calls it; a type without recorded actions fails too.

gpuctl's own SDK calls (prices, preflight, leftovers, reap) are listed below with the command that
makes them and checked the same way; a scan of the code keeps the list complete. The read-only
policy is for what docs/security.md says: prices, the leftover search and reap's dry run, and it
allows exactly their calls. The instance role's documents, as the stacks create them, allow the
lifecycle agent and the mount tools exactly their calls, on the instance's own tags and buckets.
Expected values are written out literally.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from tests.providers import alicloud_mocks, tencent_mocks
from tests.providers import test_storage_alicloud as ali_storage
from tests.providers import test_storage_tencentcloud as tc_storage
from tests.providers.policy_mocks import (
    READONLY,
    REGION,
    UP_DOWN,
    Needed,
    invoke_calls,
    provider_calls,
    refusals,
    resource_calls,
    shipped,
)
from tests.providers.pulumi_mocks import Graph
from tests.providers.test_api_actions import _cwd_for, _specs, _tencent_graph
from toolkit.errors import GpuctlError
from toolkit.providers.alicloud.leftovers import KINDS as ALI_LEFTOVERS
from toolkit.providers.alicloud.storage import StorageArgs as AliStorageArgs
from toolkit.providers.api_actions import PHASES, instance_role, load
from toolkit.providers.policy import Cloud, Policy, Request, decide, parse
from toolkit.providers.policy_scope import APP_ID, Target, request
from toolkit.providers.tencentcloud.leftovers import KINDS as TC_LEFTOVERS
from toolkit.providers.tencentcloud.storage import StorageArgs as TcStorageArgs
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.pulumi_mock

REPO = Path(__file__).resolve().parents[2]
# gpuctl's tags on everything it makes (toolkit/providers/tags.py): what reap and down release by.
OURS = {"gpuctl:cluster": "t-ours", "gpuctl:cluster-id": "5e1f0c2a9b3d", "gpuctl:managed-by": "gpuctl"}

# gpuctl's own SDK calls: (file, RAM/CAM action) -> the commands that make it. The scan below finds
# every call in these files; `test_the_sdk_call_list_is_complete` fails on one not listed here.
SDK_FILES = ("toolkit/providers/alicloud/prices.py", "toolkit/providers/tencentcloud/prices.py",
             "toolkit/providers/tencentcloud/preflight.py", "toolkit/providers/tencentcloud/leftovers.py",
             "toolkit/reap/cloud.py")
SDK_CALLS: dict[tuple[str, str], tuple[str, ...]] = {
    ("toolkit/providers/alicloud/prices.py", "ecs:DescribePrice"): ("prices refresh",),
    ("toolkit/providers/alicloud/prices.py", "ecs:DescribeSpotPriceHistory"): ("prices refresh",),
    ("toolkit/providers/alicloud/prices.py", "ecs:DescribeSpotAdvice"): ("prices refresh",),
    ("toolkit/reap/cloud.py", "ecs:DescribeRegions"): ("reap",),
    ("toolkit/reap/cloud.py", "ecs:DescribeInstances"): ("reap",),
    ("toolkit/reap/cloud.py", "ecs:DeleteInstances"): ("reap --yes --include-orphaned",),
    ("toolkit/providers/tencentcloud/prices.py", "cvm:DescribeZoneInstanceConfigInfos"): ("prices refresh",),
    ("toolkit/providers/tencentcloud/prices.py", "cvm:InquiryPriceRunInstances"): ("prices refresh",),
    ("toolkit/providers/tencentcloud/preflight.py", "cvm:DescribeHpcClusters"): ("up (preflight)",),
    ("toolkit/providers/tencentcloud/preflight.py", "cvm:RunInstances"): ("up (preflight, DryRun)",),
    ("toolkit/providers/tencentcloud/preflight.py", "cvm:DescribeImages"): ("up (preflight, the dry run's image)",),
    ("toolkit/providers/tencentcloud/preflight.py", "cvm:DescribeZoneInstanceConfigInfos"): ("up (preflight)",),
    ("toolkit/providers/tencentcloud/preflight.py", "cvm:DescribeAccountQuota"): ("up (preflight)",),
    ("toolkit/reap/cloud.py", "cvm:DescribeRegions"): ("reap",),
    ("toolkit/reap/cloud.py", "cvm:DescribeInstances"): ("reap",),
    ("toolkit/reap/cloud.py", "cvm:TerminateInstances"): ("reap --yes --include-orphaned",),
    # The leftover search of up and down, one paged Describe* per kind (leftovers.py KINDS).
    ("toolkit/providers/tencentcloud/leftovers.py", "cvm:DescribeInstances"): ("up", "down"),
    ("toolkit/providers/tencentcloud/leftovers.py", "cvm:DescribeHpcClusters"): ("up", "down"),
    ("toolkit/providers/tencentcloud/leftovers.py", "vpc:DescribeSecurityGroups"): ("up", "down"),
    ("toolkit/providers/tencentcloud/leftovers.py", "vpc:DescribeSubnets"): ("up", "down"),
    ("toolkit/providers/tencentcloud/leftovers.py", "vpc:DescribeVpcs"): ("up", "down"),
    ("toolkit/providers/tencentcloud/leftovers.py", "cvm:DescribeKeyPairs"): ("up", "down"),
}
SDK_SERVICES = {"alicloud": {"ecs"}, "tencentcloud": {"cvm", "vpc"}}
# What each release acts on: instances carrying gpuctl's tags (reap re-checks them, act.py).
RELEASES = {"ecs:DeleteInstances", "cvm:TerminateInstances"}
# The instance role's reads, granted on all resources (roles.py NODE_READS).
READS = {"cvm:DescribeInstances"}
# The read-only policy, docs/security.md: prices, the leftover search (a `down` with no stack checks
# an account) and reap without --yes. Written out: what those commands call and nothing else.
READONLY_ACTIONS = {
    "bssapi:QueryAvailableInstances", "location:DescribeEndpoints",
    "ecs:DescribePrice", "ecs:DescribeSpotPriceHistory", "ecs:DescribeSpotAdvice", "ecs:DescribeRegions",
    "ecs:DescribeInstances", "ecs:DescribeNetworkInterfaces", "ecs:DescribeSecurityGroups",
    "ecs:DescribeSecurityGroupAttribute", "ecs:DescribeKeyPairs",
    "vpc:DescribeVpcs", "vpc:DescribeVSwitches", "vpc:DescribeRouteTableList",
    # The leftover search of the instance role and the NAS groups and mount targets
    # (toolkit/providers/alicloud/leftovers.py): the ram and nas data sources' calls.
    "ram:ListRoles", "ram:GetRole", "ram:ListPolicies",
    "nas:DescribeAccessGroups", "nas:DescribeMountTargets",
}


@dataclass
class Built:
    """One program's graph and what it exercises."""

    label: str
    cloud: Cloud
    graph: Graph
    region: str
    modes: set[str] = field(default_factory=set)  # billing modes of its pools


def _spec_modes(cloud: Cloud, path: Path) -> tuple[str, set[str]]:
    spec = load_spec(path)
    return spec.region or REGION[cloud], {pool.billing.mode for pool in spec.node_pools}


def _with_role(tmp: Path, source: Path) -> Path:
    """A spec that asks for the lifecycle agent and has an object volume, next to its key file."""
    data = yaml.safe_load(source.read_text())
    data.update({"lifecycle": {**data.get("lifecycle", {}), "idle_stop_minutes": 30},
                 "storage": [{"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"}]})
    key = source.parent / data["ssh"]["public_key"]  # a spec names its key relative to itself
    shutil.copy(key, tmp / key.name)
    data["ssh"]["public_key"] = key.name
    path = tmp / f"role-{source.name}"
    path.write_text(yaml.safe_dump(data))
    return path


def _storage_programs(cloud: Cloud, label: str, spec: ClusterSpec, region: str) -> list[Built]:
    """The storage stack of a spec with volumes (and, on Alibaba, the mount targets of its NAS)."""
    if not spec.storage:
        return []
    if cloud == "alicloud":
        args = AliStorageArgs.from_spec(spec, cluster_id=alicloud_mocks.CLUSTER_ID)
        ids = {v.name: v.existing or f"fs-{n}" for n, v in enumerate(args.volumes) if v.kind == "nas"}
        return [Built(f"{label} storage", cloud, ali_storage.storage_graph(args)[0], region, {"storage"}),
                Built(f"{label} mounts", cloud, ali_storage.mounts_graph(args, ids)[0], region, {"storage"})]
    tc_args = TcStorageArgs.from_spec(spec, cluster_id=tencent_mocks.CLUSTER_ID)
    return [Built(f"{label} storage", cloud, tc_storage.storage_graph(tc_args)[0], region, {"storage"})]


def _builds(cloud: Cloud, tmp: Path) -> list[Built]:
    found: list[Built] = []
    with pytest.MonkeyPatch.context() as mp:
        for path in [*_specs(cloud), *(_with_role(tmp, p) for p in _specs(cloud)[:1])]:
            mp.chdir(path.parent if path.parent == tmp else _cwd_for(path))
            region, modes = _spec_modes(cloud, path)
            label = path.name
            if cloud == "alicloud":
                # No read-after-create here: this test decides every call itself, and lists them all.
                graph = alicloud_mocks.build_graph(alicloud_mocks.spec_args(path), policies=())
            else:
                graph = _tencent_graph(path)
            found.append(Built(label, cloud, graph, region, modes))
            found += _storage_programs(cloud, label, load_spec(path), region)
    # The storage programs of the storage tests' own specs: created and existing volumes.
    module: Any = ali_storage if cloud == "alicloud" else tc_storage
    for volumes in (module.CREATED, module.REFERENCED):
        spec = module.spec_of(volumes)
        found += _storage_programs(cloud, "test storage", spec, spec.region)
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Built]]]:
    tmp = tmp_path_factory.mktemp("policy-coverage")
    yield {cloud: _builds(cloud, tmp) for cloud in ("alicloud", "tencentcloud")}
    pulumi.runtime.settings.ROOT.set(None)  # leave no root stack with this module's exports behind


def _needed(build: Built) -> tuple[list[Needed], list[str]]:
    """Every request of one graph's resources and invokes, and the types without recorded actions."""
    needed: list[Needed] = []
    unknown: list[str] = []
    for token, name, inputs in build.graph.registered:
        if token.startswith("gpuctl:"):
            continue
        try:
            needed += resource_calls(token, name, inputs, build.region, PHASES)
        except GpuctlError as error:
            unknown.append(f"{build.label}: {token} {name}: {error.message}")
    for token in sorted({token for token, _ in build.graph.calls}):
        needed += invoke_calls(token)
    return needed, unknown


def _leftover_search(cloud: Cloud) -> list[Needed]:
    """The leftover search up and down run (Alibaba: invokes on a throwaway stack; Tencent: the SDK)."""
    if cloud == "alicloud":
        return [n for kind in ALI_LEFTOVERS for n in invoke_calls(kind.token)] + provider_calls("alicloud")
    return [Needed(f"leftover search {kind.label}", "sdk", None, Request(f"{kind.service}:{kind.action}"))
            for kind in TC_LEFTOVERS]


def _sdk_needed(cloud: Cloud, command: str | None = None) -> list[Needed]:
    found = []
    for (path, action), commands in sorted(SDK_CALLS.items()):
        if action.split(":")[0] not in SDK_SERVICES[cloud] or (command is not None and command not in commands):
            continue
        target = Target("instance", "i-ours", "cn-beijing", OURS) if action in RELEASES else None
        found.append(Needed(f"{path} ({', '.join(commands)})", "sdk", None, request(cloud, action, target)))
    return found


# ------------------------------------------------------------------------- the up/down policies


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_the_up_down_policy_allows_every_call_of_every_graph(cloud: Cloud, built: dict[str, list[Built]]) -> None:
    policy = shipped(UP_DOWN[cloud])
    lines: list[str] = []
    unknown: list[str] = []
    for build in built[cloud]:
        needed, missing = _needed(build)
        unknown += missing
        lines += [f"{build.label}: {line}" for line in refusals([policy], needed)]
    lines += refusals([policy], _leftover_search(cloud) + provider_calls(cloud))
    assert unknown == []
    assert lines == [], f"{len(lines)} call(s) {UP_DOWN[cloud]} does not allow:\n" + "\n".join(lines)


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_the_up_down_policy_allows_gpuctls_own_sdk_calls(cloud: Cloud) -> None:
    lines = refusals([shipped(UP_DOWN[cloud])], _sdk_needed(cloud))
    assert lines == []


def test_the_graphs_exercise_every_billing_mode_the_lifecycle_role_and_storage(
    built: dict[str, list[Built]],
) -> None:
    for cloud in ("alicloud", "tencentcloud"):
        modes = set().union(*(b.modes for b in built[cloud]))
        assert modes == {"pay_as_you_go", "spot", "monthly", "storage"}, cloud
    tokens = {cloud: {t for b in built[cloud] for t, _, _ in b.graph.registered} for cloud in built}
    assert {"alicloud:ram/role:Role", "alicloud:oss/bucket:Bucket", "alicloud:nas/mountTarget:MountTarget"} \
        <= tokens["alicloud"]
    assert {"tencentcloud:Cam/role:Role", "tencentcloud:Cos/bucket:Bucket", "tencentcloud:Cfs/fileSystem:FileSystem",
            "tencentcloud:Cvm/actionTimer:ActionTimer"} <= tokens["tencentcloud"]


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_the_up_down_policy_grants_nothing_no_call_needs(cloud: Cloud) -> None:
    """Least privilege: every action it names is one a resource, invoke, start-up or SDK call of
    gpuctl's makes (or PassRole, which giving an instance a role needs)."""
    data = load(cloud)
    wanted = {c.action for c in data.provider_calls if c.gpuctl_triggers}
    for entry in [*data.resources.values(), *data.invokes.values()]:
        wanted |= {c.action for phase in PHASES for c in entry.calls(phase) if c.gpuctl_triggers}
    wanted |= {action for _, action in SDK_CALLS if action.split(":")[0] in SDK_SERVICES[cloud]}
    wanted |= {"ram:PassRole"} if cloud == "alicloud" else {"cam:PassRole"}
    granted = {a for s in shipped(UP_DOWN[cloud]).statements for a in s.actions}
    assert sorted(granted - wanted) == []


def test_instance_changes_and_releases_are_allowed_on_gpuctls_instances_only() -> None:
    """The tag condition holds: another account user's instance, untagged, is refused."""
    ali, tc = shipped(UP_DOWN["alicloud"]), shipped(UP_DOWN["tencentcloud"])
    foreign = {"team": "other"}
    for action in ("ecs:DeleteInstance", "ecs:ModifyInstanceChargeType", "ecs:StopInstance", "ecs:DeleteInstances"):
        assert decide([ali], request("alicloud", action, Target("instance", "i-1", "cn-beijing", OURS))).allowed
        assert not decide([ali], request("alicloud", action, Target("instance", "i-2", "cn-beijing", foreign))).allowed
    assert decide([tc], request("tencentcloud", "cvm:TerminateInstances",
                                Target("instance", "ins-1", "ap-shanghai", OURS))).allowed
    assert not decide([tc], request("tencentcloud", "cvm:TerminateInstances",
                                    Target("instance", "ins-2", "ap-shanghai", foreign))).allowed
    # RAM roles and policies: gpuctl's names only; PassRole of an admin role is refused.
    assert decide([ali], request("alicloud", "ram:PassRole", Target("role", "gpuctl-demo-5e1f0c2a9b3d-node"))).allowed
    assert not decide([ali], request("alicloud", "ram:PassRole", Target("role", "AdministratorRole"))).allowed


# ------------------------------------------------------------------------- gpuctl's own SDK calls

_CALL = re.compile(r"\.(?:call|pages)\(\s*\"(?P<first>\w+)\"(?:,\s*\"(?P<second>\w+)\")?")


def _scan() -> dict[tuple[str, str], list[int]]:
    """(file, action) -> lines, of every literal SDK call in SDK_FILES (and leftovers.py's KINDS)."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in SDK_FILES:
        for number, line in enumerate((REPO / path).read_text().splitlines(), 1):
            for match in _CALL.finditer(line):
                first, second = match["first"], match["second"]
                action = f"{first}:{second}" if second and first in ("cvm", "vpc") else f"ecs:{first}"
                found.setdefault((path, action), []).append(number)
    leftovers = "toolkit/providers/tencentcloud/leftovers.py"
    for number, line in enumerate((REPO / leftovers).read_text().splitlines(), 1):
        kind = re.search(r'LeftoverKind\("[^"]+", "(?P<service>cvm|vpc)", "(?P<action>\w+)"', line)
        if kind:
            found.setdefault((leftovers, f"{kind['service']}:{kind['action']}"), []).append(number)
    return found


def test_the_sdk_call_list_is_complete() -> None:
    found = _scan()
    assert sorted(found) == sorted(SDK_CALLS), "\n".join(
        f"{path}:{lines[0]} {action}" for (path, action), lines in sorted(found.items()))


# ------------------------------------------------------------------------- the read-only policy


def test_the_readonly_policy_allows_prices_leftovers_and_reaps_dry_run_exactly() -> None:
    readonly = shipped(READONLY)
    needed = _sdk_needed("alicloud", "prices refresh") + _sdk_needed("alicloud", "reap") + \
        _leftover_search("alicloud")
    assert refusals([readonly], needed) == []
    granted = {a for s in readonly.statements for a in s.actions}
    assert granted == READONLY_ACTIONS
    assert {n.request.action for n in needed} == READONLY_ACTIONS
    # It changes nothing: no release, no create, no delete of what up makes.
    release = _sdk_needed("alicloud", "reap --yes --include-orphaned")
    assert [n.request.action for n in release] == ["ecs:DeleteInstances"]
    assert len(refusals([readonly], release)) == 1
    assert all(re.match(r"^[a-z]+:(Describe|List|Get|Query)", a) for a in granted)


# ------------------------------------------------------------------------- the instance role


def _documents(build: Built) -> list[Policy]:
    cloud = build.cloud
    key, token = ("policyDocument", "alicloud:ram/policy:Policy") if cloud == "alicloud" else \
        ("document", "tencentcloud:Cam/policy:Policy")
    return [parse(json.loads(inputs[key]), cloud, name=f"{name} (as created)")
            for typ, name, inputs in build.graph.registered if typ == token]


def _instances(build: Built) -> list[tuple[str, dict[str, str]]]:
    token = "alicloud:ecs/instance:Instance" if build.cloud == "alicloud" else "tencentcloud:Instance/instance:Instance"
    return [(f"{name}-id", dict(inputs.get("tags") or {})) for typ, name, inputs in build.graph.registered
            if typ == token]


def _role_requests(cloud: Cloud, instance: tuple[str, dict[str, str]], region: str, bucket: str) -> list[Needed]:
    users = instance_role(cloud)
    found = [Needed(f"lifecycle agent on {instance[0]}", "agent", call,
                    request(cloud, call.action, Target("instance", instance[0], region, instance[1])))
             for call in users["lifecycle_agent"] if call.gpuctl_triggers]
    mount = "ossfs" if cloud == "alicloud" else "cosfs"
    found += [Needed(f"{mount} on {bucket}", "mount", call,
                     request(cloud, call.action, Target("object", "ckpt/step-100.pt", region, other=bucket)))
              for call in users[mount] if call.gpuctl_triggers]
    return found


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_the_instance_role_allows_the_agent_and_the_mount_tool_on_its_own_cluster_only(
    cloud: Cloud, built: dict[str, list[Built]],
) -> None:
    [build] = [b for b in built[cloud] if b.label.startswith("role-") and b.label.endswith(".yaml")]
    [document] = _documents(build)
    cluster = build.graph.registered[0][1]
    bucket = f"{cluster}-ckpt" if cloud == "alicloud" else f"{cluster}-ckpt-{APP_ID}"
    instances = _instances(build)
    assert instances
    for instance in instances:
        assert refusals([document], _role_requests(cloud, instance, build.region, bucket)) == []
    # Another cluster's instance and another bucket are refused, every action of them.
    other = (instances[0][0] + "-other", {**instances[0][1], "gpuctl:cluster-id": "0123456789ab"})
    refused = refusals([document], _role_requests(cloud, other, build.region, "team-secrets"))
    # Every change is refused; a read of instances (the stop's confirmation) is not a change.
    wanted = [c for user in instance_role(cloud).values() for c in user
              if c.gpuctl_triggers and c.action not in READS]
    assert len(refused) == len(wanted)
    # Nothing beyond those calls (and the reads) is granted.
    granted = {a for s in document.statements for a in s.actions}
    assert granted == {c.action for c in wanted} | (READS if cloud == "tencentcloud" else set())


def test_the_mount_tools_bucket_actions_are_the_ones_they_call() -> None:
    ali = {c.action for c in instance_role("alicloud")["ossfs"] if c.gpuctl_triggers}
    tc = {c.action for c in instance_role("tencentcloud")["cosfs"] if c.gpuctl_triggers}
    assert ali == {"oss:ListObjects", "oss:GetObject", "oss:PutObject", "oss:DeleteObject", "oss:AbortMultipartUpload"}
    assert tc == {"cos:GetBucket", "cos:HeadObject", "cos:GetObject", "cos:PutObject", "cos:PutObjectCopy",
                  "cos:DeleteObject", "cos:InitiateMultipartUpload", "cos:UploadPart", "cos:UploadPartCopy",
                  "cos:CompleteMultipartUpload"}


def test_figures(built: dict[str, list[Built]], capsys: pytest.CaptureFixture[str]) -> None:
    """The closing note's figures: resource types, actions, programs and billing modes covered."""
    figures: dict[str, Any] = {}
    for cloud in ("alicloud", "tencentcloud"):
        needed = [n for b in built[cloud] for n in _needed(b)[0]] + _leftover_search(cloud) + provider_calls(
            cloud) + _sdk_needed(cloud)
        types = {t for b in built[cloud] for t, _, _ in b.graph.registered if not t.startswith("gpuctl:")}
        figures[cloud] = {"programs": len(built[cloud]), "resource types": len(types),
                          "actions": len({n.request.action for n in needed}), "requests": len(needed)}
    with capsys.disabled():
        print(f"\npolicy coverage: {json.dumps(figures)}")
    assert figures["alicloud"]["resource types"] == 19  # with ecs.RamRoleAttachment
    assert figures["tencentcloud"]["resource types"] == 15
