"""The Tencent component's resource graph under Pulumi mocks (no CLI, no cloud).

Expected values are written out literally; the catalog is read, never compared with itself.
Golden summaries: tests/providers/golden/tencentcloud-<spec>.json; rewrite with GPUCTL_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import inspect
import ipaddress
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tencentcloud_iac_pulumi as tencentcloud

from tests.conftest import REPO
from tests.providers.tencent_mocks import (
    ACTION_TIMER,
    GOLDEN,
    HPC_CLUSTER,
    INSTANCE,
    KEY_PAIR,
    NOW,
    RULE_SET,
    SECURITY_GROUP,
    SPECS,
    SUBNET,
    VPC,
    Graph,
    build_graph,
    spec_args,
)
from toolkit.catalog import load_catalog
from toolkit.errors import CatalogError, UsageError
from toolkit.providers.base import NodeOutput
from toolkit.providers.tencentcloud.args import GpuClusterArgs, NetworkIds, check_billing, key_pair_name
from toolkit.providers.tencentcloud.plan import planned_resources
from toolkit.spec.loader import load_spec, load_spec_text

pytestmark = pytest.mark.pulumi_mock

EXAMPLES = REPO / "examples"
SPEC_FILES = {
    "example-hcc-2x8": EXAMPLES / "tencentcloud-hcc-2x8.yaml",
    "example-gt4-spot": EXAMPLES / "tencentcloud-gt4-spot.yaml",
    "example-hcc-two-pools": EXAMPLES / "tencentcloud-hcc-two-pools.yaml",
    "monthly": SPECS / "tencent-monthly.yaml",
    "spot-catalog-price": SPECS / "tencent-spot-catalog-price.yaml",
}
FABRIC = {"example-hcc-2x8": "rdma", "example-gt4-spot": "tcp", "example-hcc-two-pools": "rdma",
          "monthly": "tcp", "spot-catalog-price": "tcp"}
# Resources whose class takes no `tags` in tencentcloud-iac-pulumi 0.2.3 (checked below, not assumed):
# a rule set belongs to its group, a timer to its instance; the HPC cluster carries the cluster id in its name;
# the instance role's policy and attachment (roles.py) belong to the role.
UNTAGGABLE = {RULE_SET, ACTION_TIMER, HPC_CLUSTER, "tencentcloud:Cam/policy:Policy",
              "tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment"}
GPUCTL_TAG_KEYS = {"gpuctl:cluster", "gpuctl:cluster-id", "gpuctl:owner", "gpuctl:expires", "gpuctl:managed-by"}
KEY = "ssh-rsa AAAAB3NzaC1yc2E test"


@pytest.fixture(scope="module")
def graphs() -> dict[str, Graph]:
    return {name: build_graph(spec_args(path)) for name, path in SPEC_FILES.items()}


def _args(text: str, **kwargs: Any) -> GpuClusterArgs:
    return GpuClusterArgs.from_spec(load_spec_text(text), load_catalog("tencentcloud"), now=NOW, public_key=KEY,
                                    **kwargs)


def _registered(graph: Graph, type_: str) -> dict[str, dict[str, Any]]:
    return {name: inputs for t, name, inputs in graph.registered if t == type_}


# ------------------------------------------------------------------------------- HCC / RDMA


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_hpc_cluster_exists_iff_rdma_and_every_instance_is_placed_in_it(graphs: dict[str, Graph], name: str) -> None:
    graph = graphs[name]
    hpc = graph.of_type(HPC_CLUSTER)
    instances = _registered(graph, INSTANCE)
    assert instances
    if FABRIC[name] == "rdma":
        (cluster,) = hpc
        assert cluster.inputs["zone"] == "ap-shanghai-5"
        # The engine saw the HPC cluster's id (the mock's "<name>-id") on every instance.
        assert {i["hpcClusterId"] for i in instances.values()} == {f"{cluster.name}-id"}
    else:
        assert hpc == []
        assert all("hpcClusterId" not in i for i in instances.values())


def test_the_hpc_cluster_is_named_with_the_cluster_id(graphs: dict[str, Graph]) -> None:
    (hpc,) = graphs["example-hcc-2x8"].of_type(HPC_CLUSTER)
    assert (hpc.name, hpc.inputs["name"]) == ("hcc-v100-hcc", "hcc-v100-5e1f0c2a9b3d")
    assert hpc.inputs["remark"] == "gpuctl cluster hcc-v100 (5e1f0c2a9b3d): HCC RDMA nodes"


def test_an_hcc_type_on_tcp_is_still_placed_in_an_hpc_cluster() -> None:
    text = (EXAMPLES / "tencentcloud-hcc-2x8.yaml").read_text().replace("fabric: rdma", "fabric: tcp")
    graph = build_graph(_args(text))
    assert [h.name for h in graph.of_type(HPC_CLUSTER)] == ["hcc-v100-hcc"]
    assert {i["hpcClusterId"] for i in _registered(graph, INSTANCE).values()} == {"hcc-v100-hcc-id"}


def test_rdma_refuses_a_type_that_is_not_hcc_and_erdma_is_refused() -> None:
    text = (EXAMPLES / "tencentcloud-gt4-spot.yaml").read_text().replace("fabric: tcp", "fabric: rdma")
    with pytest.raises(CatalogError, match=r"node pool gpu: GT4\.41XLARGE948 is not an HCC type") as error:
        _args(text)
    assert "catalog tencentcloud --fabric rdma" in str(error.value.hint)
    with pytest.raises(CatalogError, match="erdma is Alibaba Cloud's elastic RDMA"):
        _args(text.replace("fabric: rdma", "fabric: erdma"))


def test_one_hcc_pool_among_two_on_rdma_is_refused_by_name() -> None:
    text = (EXAMPLES / "tencentcloud-hcc-two-pools.yaml").read_text().replace(
        "instance_type: HCCG5v.24XLARGE384\n    count: 1", "instance_type: GT4.4XLARGE96\n    count: 1"
    )
    with pytest.raises(CatalogError, match=r"node pool alt: GT4\.4XLARGE96 is not an HCC type"):
        _args(text)


def test_unknown_type_and_foreign_image_alias_are_refused() -> None:
    base = (SPECS / "tencent-monthly.yaml").read_text()
    with pytest.raises(CatalogError, match=r"instance type GN99\.NOPE is not in the tencentcloud catalog"):
        _args(base.replace("GN7.2XLARGE32", "GN99.NOPE"))
    with pytest.raises(CatalogError, match="image 'alinux_3' is not available on Tencent Cloud"):
        _args(base.replace("img-testimage01", "alinux_3"))


# ------------------------------------------------------------------------------- security group


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_only_ssh_from_admin_cidr_is_open_from_outside(graphs: dict[str, Graph], name: str) -> None:
    graph = graphs[name]
    admin = load_spec(SPEC_FILES[name]).network.admin_cidr
    (rules,) = graph.of_type(RULE_SET)
    ingresses = rules.inputs["ingresses"]
    assert len(ingresses) == 3
    assert {r["action"] for r in ingresses} == {"ACCEPT"}
    from_outside = [r for r in ingresses if "cidr_block" in r]
    assert len(from_outside) == 1
    (ssh,) = from_outside
    assert (ssh["protocol"], ssh["port"], ssh["cidr_block"]) == ("TCP", "22", admin)
    assert ipaddress.ip_network(ssh["cidr_block"]).prefixlen >= 24
    inside = [r for r in ingresses if "cidr_block" not in r]
    assert sorted(r["protocol"] for r in inside) == ["ALL", "ICMP"]
    assert all(r["source_security_id"] == "<output>" for r in inside)
    # Egress is open (a Tencent group without rules denies all traffic), and nothing else is.
    assert rules.inputs["egresses"] == [
        {"action": "ACCEPT", "protocol": "ALL", "port": "ALL", "cidr_block": "0.0.0.0/0",
         "description": "all outbound (package installs); a group without rules denies it"}
    ]


def test_the_rules_name_their_own_group_as_the_source(graphs: dict[str, Graph]) -> None:
    (rules,) = _registered(graphs["example-hcc-2x8"], RULE_SET).values()
    assert rules["securityGroupId"] == "hcc-v100-sg-id"
    assert [r.get("sourceSecurityId") for r in rules["ingresses"]] == [None, "hcc-v100-sg-id", "hcc-v100-sg-id"]


def test_world_ssh_only_when_the_spec_allows_it() -> None:
    text = (SPECS / "tencent-monthly.yaml").read_text().replace(
        "admin_cidr: 192.0.2.0/24", "admin_cidr: 0.0.0.0/0\n  allow_world_ssh: true"
    )
    (rules,) = build_graph(_args(text)).of_type(RULE_SET)
    assert [r["cidr_block"] for r in rules.inputs["ingresses"] if "cidr_block" in r] == ["0.0.0.0/0"]


# --------------------------------------------------------------------------------- TTL, billing


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_every_hourly_or_spot_instance_has_an_action_timer_at_its_expiry(graphs: dict[str, Graph], name: str) -> None:
    graph = graphs[name]
    instances = graph.of_type(INSTANCE)
    timers = {t.name: t for t in graph.of_type(ACTION_TIMER)}
    timed = [i for i in instances if i.inputs["instance_charge_type"] in ("POSTPAID_BY_HOUR", "SPOTPAID")]
    assert sorted(timers) == sorted(f"{i.name}-ttl" for i in timed)
    for instance in timed:
        timer = timers[f"{instance.name}-ttl"]
        assert timer.parent == instance.parent
        assert timer.inputs["action_timer"] == {
            "timer_action": "TerminateInstances", "action_time": instance.inputs["tags"]["gpuctl:expires"]
        }
    registered = _registered(graph, ACTION_TIMER)
    assert {t["instanceId"] for t in registered.values()} == {f"{i.name}-id" for i in timed}


def test_the_timer_is_creation_plus_ttl_on_the_minute(graphs: dict[str, Graph]) -> None:
    # NOW = 2026-11-29 09:15:42 UTC. ttl 8h -> 17:15:42, rounded up to 17:16:00; ttl 40m -> 09:56:00.
    assert {t.inputs["action_timer"]["action_time"] for t in graphs["example-hcc-2x8"].of_type(ACTION_TIMER)} == {
        "2026-11-29T17:16:00Z"
    }
    assert {t.inputs["action_timer"]["action_time"] for t in graphs["spot-catalog-price"].of_type(ACTION_TIMER)} == {
        "2026-11-29T09:56:00Z"
    }
    pinned = spec_args(SPECS / "tencent-spot-catalog-price.yaml", now=NOW + timedelta(minutes=10))
    assert pinned.expires_at == "2026-11-29T10:06:00Z"  # unpinned: counts from this run
    pinned = GpuClusterArgs.from_spec(
        load_spec(SPECS / "tencent-spot-catalog-price.yaml"), load_catalog("tencentcloud"),
        now=NOW + timedelta(minutes=10), created_at=NOW, public_key=KEY,
    )
    assert (pinned.created_at, pinned.expires_at) == ("2026-11-29T09:15:42Z", "2026-11-29T09:56:00Z")


def test_a_timer_too_close_to_now_is_refused_with_the_reason() -> None:
    spec = load_spec(SPECS / "tencent-spot-catalog-price.yaml")  # ttl 40m, not bare metal: 5 + 15 minutes
    catalog = load_catalog("tencentcloud")
    GpuClusterArgs.from_spec(spec, catalog, now=NOW + timedelta(minutes=20), created_at=NOW, public_key=KEY)
    with pytest.raises(UsageError, match=r"too soon for Tencent to accept an ActionTimer \(at least 20 minutes"):
        GpuClusterArgs.from_spec(spec, catalog, now=NOW + timedelta(minutes=21), created_at=NOW, public_key=KEY)
    # HCC nodes are bare metal: 5 + 40 minutes, so a 30-minute TTL cannot be timed there.
    hcc = (EXAMPLES / "tencentcloud-hcc-2x8.yaml").read_text().replace("ttl: 8h", "ttl: 30m")
    with pytest.raises(UsageError, match="at least 45 minutes") as error:
        _args(hcc)
    assert "raise lifecycle.ttl to at least 45m" in str(error.value.hint)


def test_spot_arguments(graphs: dict[str, Graph]) -> None:
    for instance in graphs["example-gt4-spot"].of_type(INSTANCE):
        assert instance.inputs["instance_charge_type"] == "SPOTPAID"
        assert instance.inputs["spot_instance_type"] == "ONE-TIME"
        assert instance.inputs["spot_max_price"] == "120"
        assert "instance_charge_type_prepaid_period" not in instance.inputs
    # No ceiling in the spec: the catalog's pay-as-you-go price for GT4.4XLARGE96, 28.64 CNY/h, and a warning.
    args = spec_args(SPECS / "tencent-spot-catalog-price.yaml")
    assert {i.inputs["spot_max_price"] for i in graphs["spot-catalog-price"].of_type(INSTANCE)} == {"28.64"}
    assert any("the ceiling is 28.64 CNY/h, the catalog's pay-as-you-go price" in w for w in args.warnings)


def test_spot_without_a_ceiling_or_a_catalog_price_is_refused() -> None:
    text = (SPECS / "tencent-spot-catalog-price.yaml").read_text().replace("GT4.4XLARGE96", "PNV4.7XLARGE116")
    # PNV4.7XLARGE116 has a third-party figure only, which is never set as a real bid.
    with pytest.raises(CatalogError, match=r"no official pay-as-you-go list price for PNV4\.7XLARGE116 to use as "
                                           r"one \(its third-party API pull figure is not used as a bid\)") as error:
        _args(text)
    assert error.value.hint == "set billing.spot_max_price_per_hour (CNY per instance-hour)"
    spec = load_spec_text(text)
    with pytest.raises(CatalogError):
        check_billing(spec.node_pools[0], load_catalog("tencentcloud").find("PNV4.7XLARGE116"),  # type: ignore[arg-type]
                      spec.region)


def test_monthly_is_prepaid_without_timer_never_renews_and_warns(graphs: dict[str, Graph]) -> None:
    (instance,) = graphs["monthly"].of_type(INSTANCE)
    assert instance.inputs["instance_charge_type"] == "PREPAID"
    assert instance.inputs["instance_charge_type_prepaid_period"] == 2
    assert instance.inputs["instance_charge_type_prepaid_renew_flag"] == "NOTIFY_AND_MANUAL_RENEW"
    assert instance.inputs["force_delete"] is True
    assert "spot_instance_type" not in instance.inputs
    assert graphs["monthly"].of_type(ACTION_TIMER) == []
    assert instance.inputs["tags"]["gpuctl:expires"] == "2026-12-01T09:16:00Z"  # still tagged, for the reaper
    warnings = spec_args(SPECS / "tencent-monthly.yaml").warnings
    assert warnings[0].startswith("node pool box: monthly (PREPAID, 2 months): paid up front and not terminated")
    text = (SPECS / "tencent-monthly.yaml").read_text()
    with pytest.raises(CatalogError, match=r"billing\.months: 13 is not a subscription length Tencent sells"):
        _args(text.replace("months: 2}", "months: 13}"))


# ---------------------------------------------------------------------------------------- tags


def test_the_untaggable_types_really_take_no_tags() -> None:
    for cls in (tencentcloud.security.GroupRuleSet, tencentcloud.cvm.ActionTimer, tencentcloud.cvm.HpcCluster,
                tencentcloud.cam.Policy, tencentcloud.cam.RolePolicyAttachment):
        assert "tags" not in inspect.signature(cls._internal_init).parameters, cls
    for cls in (tencentcloud.vpc.Instance, tencentcloud.subnet.Instance, tencentcloud.security.Group,
                tencentcloud.key.Pair, tencentcloud.instance.Instance, tencentcloud.cam.Role):
        assert "tags" in inspect.signature(cls._internal_init).parameters, cls


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_every_taggable_resource_carries_the_cluster_tags(graphs: dict[str, Graph], name: str) -> None:
    graph = graphs[name]
    spec = load_spec(SPEC_FILES[name])
    taggable = [r for r in graph.custom() if r.type not in UNTAGGABLE]
    role = {"tencentcloud:Cam/role:Role"} if spec.lifecycle.agent_wanted else set()  # the agent's (roles.py)
    assert {r.type for r in taggable} == {VPC, SUBNET, SECURITY_GROUP, KEY_PAIR, INSTANCE} | role
    for resource in taggable:
        tags = resource.inputs["tags"]
        assert set(tags) >= GPUCTL_TAG_KEYS, resource.name
        assert tags["gpuctl:cluster"] == spec.name
        assert tags["gpuctl:cluster-id"] == "5e1f0c2a9b3d"
        assert tags["gpuctl:managed-by"] == "gpuctl"
        assert {k: tags[k] for k in spec.tags} == spec.tags
    assert all("tags" not in r.inputs for r in graph.custom() if r.type in UNTAGGABLE)


def test_every_resource_has_a_gpuctl_parent(graphs: dict[str, Graph]) -> None:
    for resource in graphs["example-hcc-two-pools"].resources:
        if resource.type == "gpuctl:tencentcloud:GpuCluster":
            continue
        assert resource.parent is not None, resource.name
        assert resource.parent.startswith("gpuctl:tencentcloud:"), resource.name


# ------------------------------------------------------------------------------ instances, images


def test_image_lookup_takes_the_newest_public_image_for_the_type(graphs: dict[str, Graph]) -> None:
    calls = graphs["example-hcc-2x8"].calls
    assert calls == [(
        "tencentcloud:Images/getInstance:getInstance",
        {"imageNameRegex": r"^Ubuntu Server 22\.04 LTS 64(位|bit)$", "imageTypes": ["PUBLIC_IMAGE"],
         "instanceType": "HCCG5v.24XLARGE384"},
    )]
    assert {i["imageId"] for i in _registered(graphs["example-hcc-2x8"], INSTANCE).values()} == {"img-ubuntu2204new"}
    assert graphs["monthly"].calls == []  # image id given: no lookup
    assert {i["imageId"] for i in _registered(graphs["monthly"], INSTANCE).values()} == {"img-testimage01"}
    two = _registered(graphs["example-hcc-two-pools"], INSTANCE)
    assert {n: i["imageId"] for n, i in two.items()} == {
        "hcc-mixed-train-0": "img-ubuntu2204new", "hcc-mixed-train-1": "img-ubuntu2204new",
        "hcc-mixed-alt-0": "img-tencentos3",
    }


def test_instance_arguments(graphs: dict[str, Graph]) -> None:
    instances = {i.name: i.inputs for i in graphs["example-hcc-two-pools"].of_type(INSTANCE)}
    assert sorted(instances) == ["hcc-mixed-alt-0", "hcc-mixed-train-0", "hcc-mixed-train-1"]
    train = instances["hcc-mixed-train-0"]
    assert (train["instance_name"], train["hostname"]) == ("hcc-mixed-train-0", "hcc-mixed-train-0")
    assert (train["instance_type"], train["availability_zone"]) == ("HCCG5v.24XLARGE384", "ap-shanghai-5")
    assert (train["system_disk_type"], train["system_disk_size"]) == ("CLOUD_BSSD", 500)
    assert instances["hcc-mixed-alt-0"]["system_disk_size"] == 200
    assert (train["allocate_public_ip"], train["internet_charge_type"], train["internet_max_bandwidth_out"]) == (
        True, "TRAFFIC_POSTPAID_BY_HOUR", 100
    )
    assert (train["orderly_security_groups"], train["key_ids"]) == (["<output>"], ["<output>"])
    registered = _registered(graphs["example-hcc-two-pools"], INSTANCE)["hcc-mixed-train-0"]
    assert (registered["vpcId"], registered["subnetId"]) == ("hcc-mixed-vpc-id", "hcc-mixed-subnet-id")
    assert (registered["orderlySecurityGroups"], registered["keyIds"]) == (["hcc-mixed-sg-id"], ["hcc-mixed-key-id"])
    (box,) = graphs["monthly"].of_type(INSTANCE)
    assert box.inputs["allocate_public_ip"] is False
    assert "internet_max_bandwidth_out" not in box.inputs


def test_with_the_storage_stacks_network_the_cluster_creates_no_vpc_or_subnet_and_joins_it() -> None:
    """A spec that creates a CFS: the storage stack owns the VPC and subnet (storage.py); the cluster
    stack keeps its security group, key, HPC cluster and instances, and puts the instances in that subnet."""
    args = dataclasses.replace(spec_args(EXAMPLES / "tencentcloud-hcc-two-pools.yaml"),
                               existing_network=NetworkIds(vpc_id="vpc-st0rage1", subnet_id="subnet-st0rage1"))
    graph = build_graph(args)
    types = [r.type for r in graph.custom()]
    assert VPC not in types
    assert SUBNET not in types
    assert sorted(set(types)) == sorted({SECURITY_GROUP, RULE_SET, KEY_PAIR, HPC_CLUSTER, INSTANCE, ACTION_TIMER})
    instances = _registered(graph, INSTANCE)
    assert sorted(instances) == ["hcc-mixed-alt-0", "hcc-mixed-train-0", "hcc-mixed-train-1"]
    assert {(i["vpcId"], i["subnetId"]) for i in instances.values()} == {("vpc-st0rage1", "subnet-st0rage1")}


def test_the_plan_of_a_spec_creating_a_cfs_leaves_the_network_to_the_storage_stack() -> None:
    text = (EXAMPLES / "tencentcloud-hcc-two-pools.yaml").read_text() + (
        "storage:\n  - name: data\n    kind: nas\n    mount_path: /mnt/data\n")
    spec = load_spec_text(text)
    planned = planned_resources(spec)
    assert [(p.type, p.name) for p in planned][:3] == [
        (SECURITY_GROUP, "hcc-mixed-sg"), (RULE_SET, "hcc-mixed-sg-rules"), (KEY_PAIR, "hcc-mixed-key")]
    assert not [p for p in planned if p.type in (VPC, SUBNET)]
    # ... the storage stack's plan lines hold them instead, with what happens to them on `down`.
    from toolkit.providers.tencentcloud.provider import planned_storage

    network = [(p.type, p.name, p.detail) for p in planned_storage(spec) if p.type in (VPC, SUBNET)]
    assert network == [
        (VPC, "hcc-mixed-vpc", "10.45.0.0/16; storage stack (the CFS lives in it), kept by down with the CFS"),
        (SUBNET, "hcc-mixed-subnet",
         "10.45.8.0/22 in ap-shanghai-5; storage stack (the CFS lives in it), kept by down with the CFS"),
    ]
    # And the cluster's plan is still its graph, joined to that network.
    graph = build_graph(_args(text, cluster_id="5e1f0c2a9b3d",
                              existing_network=NetworkIds(vpc_id="vpc-st0rage1", subnet_id="subnet-st0rage1")))
    custom = [(r.type, r.name) for r in graph.custom()]
    matched: set[tuple[str, str]] = set()
    for item in planned:
        hits = [(t, n) for t, n in custom if t == item.type and fnmatch.fnmatchcase(n, item.name)]
        assert len(hits) == item.count, (item.type, item.name, hits)
        matched |= set(hits)
    assert matched == set(custom)


def test_the_engine_gets_the_timeouts_and_ignores_image_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the Pulumi engine receives (RegisterResource), not only what the program asked for."""
    from pulumi.runtime.mocks import MockMonitor

    seen: dict[str, tuple[list[str], Any]] = {}
    original: Any = MockMonitor.RegisterResource

    def register(self: Any, request: Any) -> Any:
        seen[request.name] = (list(request.ignoreChanges), request.customTimeouts)
        return original(self, request)

    monkeypatch.setattr(MockMonitor, "RegisterResource", register)
    build_graph(spec_args(EXAMPLES / "tencentcloud-hcc-2x8.yaml"))
    ignore, timeouts = seen["hcc-v100-gpu-0"]
    assert ignore == ["imageId"]  # a newer public image never reinstalls a node on a later `up`
    assert (timeouts.create, timeouts.delete) == ("40m", "")  # HCC: bare metal; the provider has no delete timeout
    build_graph(spec_args(SPECS / "tencent-monthly.yaml"))
    ignore, timeouts = seen["t-tc-monthly-box-0"]
    assert ignore == ["imageId"]
    assert (timeouts.create, timeouts.delete) == ("", "")  # not bare metal: the provider's 15 minutes


def test_the_key_pair_name_fits_tencents_rules(graphs: dict[str, Graph]) -> None:
    (key,) = graphs["example-hcc-2x8"].of_type(KEY_PAIR)
    assert key.inputs["key_name"] == "gpuctl_5e1f0c2a9b3d"
    assert key_pair_name("hcc-v100", None) == "gpuctl_hcc_v100"
    assert key_pair_name("a-very-long-cluster-name-of-32c", None) == "gpuctl_a_very_long_cluste"
    hashed = key_pair_name("x", "team-a-cluster-7")  # a hand-set id with '-': hashed to 12 hex digits
    assert (hashed[:7], len(hashed), "-" in hashed) == ("gpuctl_", 19, False)


def test_the_mtu_is_the_fabrics_the_hcc_bonds_are_never_given_the_vpcs() -> None:
    hcc = spec_args(EXAMPLES / "tencentcloud-hcc-2x8.yaml")  # rdma, mtu 8500 asked; no GPU family has max_mtu
    assert (hcc.mtu, hcc.requested_mtu) == (8500, None)
    spot = spec_args(EXAMPLES / "tencentcloud-gt4-spot.yaml")
    assert (spot.mtu, spot.requested_mtu) == (1500, None)
    tcp_jumbo = spec_args(SPECS / "tencent-spot-catalog-price.yaml")  # tcp over the VPC, 8500 asked
    assert (tcp_jumbo.mtu, tcp_jumbo.requested_mtu) == (1500, 8500)


# ------------------------------------------------------------------------------------ outputs


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_outputs_shape_fits_node_output(graphs: dict[str, Graph], name: str) -> None:
    nodes = graphs[name].nodes
    assert len(nodes) == len(graphs[name].of_type(INSTANCE))
    for node in nodes:
        parsed = NodeOutput.model_validate({**node, "ssh_host": node["public_ip"] or node["private_ip"]})
        assert parsed.name.startswith(f"{load_spec(SPEC_FILES[name]).name}-")
        assert parsed.fabric_interfaces == []


def test_login_users_follow_the_image_or_the_spec(graphs: dict[str, Graph]) -> None:
    users = {n["name"]: n["ssh_user"] for n in graphs["example-hcc-two-pools"].nodes}
    assert users == {"hcc-mixed-train-0": "ubuntu", "hcc-mixed-train-1": "ubuntu", "hcc-mixed-alt-0": "root"}
    assert [n["ssh_user"] for n in graphs["monthly"].nodes] == ["ops"]  # ssh.user wins
    assert [n["public_ip"] for n in graphs["monthly"].nodes] == [None]


# ---------------------------------------------------------------------------- plan = mocked graph


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_plan_lists_exactly_the_mocked_graph(graphs: dict[str, Graph], name: str) -> None:
    planned = planned_resources(load_spec(SPEC_FILES[name]))
    custom = [(r.type, r.name) for r in graphs[name].custom()]
    matched: set[tuple[str, str]] = set()
    for item in planned:
        hits = [(t, n) for t, n in custom if t == item.type and fnmatch.fnmatchcase(n, item.name)]
        assert len(hits) == item.count, (item.type, item.name, hits)
        assert not matched & set(hits), f"{item.name} overlaps another planned entry"
        matched |= set(hits)
    assert matched == set(custom)


def test_plan_of_the_two_pool_example_literally() -> None:
    planned = planned_resources(load_spec(EXAMPLES / "tencentcloud-hcc-two-pools.yaml"))
    assert [(p.type, p.name, p.count) for p in planned] == [
        (VPC, "hcc-mixed-vpc", 1),
        (SUBNET, "hcc-mixed-subnet", 1),
        (SECURITY_GROUP, "hcc-mixed-sg", 1),
        (RULE_SET, "hcc-mixed-sg-rules", 1),
        (KEY_PAIR, "hcc-mixed-key", 1),
        (HPC_CLUSTER, "hcc-mixed-hcc", 1),
        (INSTANCE, "hcc-mixed-train-*", 2),
        (ACTION_TIMER, "hcc-mixed-train-*-ttl", 2),
        (INSTANCE, "hcc-mixed-alt-*", 1),
        (ACTION_TIMER, "hcc-mixed-alt-*-ttl", 1),
    ]
    assert planned[3].detail == (
        "ingress: tcp/22 from 198.51.100.7/32; all traffic and ICMP between members; egress: all"
    )


# ------------------------------------------------------------------------------------ golden


def _summary(graph: Graph) -> dict[str, Any]:
    resources = sorted(
        (
            {"type": r.type, "name": r.name, "parent": r.parent, "inputs": r.inputs}
            | ({"options": r.options} if r.options else {})
            for r in graph.resources
        ),
        key=lambda r: (str(r["type"]), str(r["name"])),
    )
    counts: dict[str, int] = {}
    for r in graph.resources:
        counts[r.type] = counts.get(r.type, 0) + 1
    return {
        "counts": dict(sorted(counts.items())),
        "resources": resources,
        "invokes": sorted(json.dumps(c, sort_keys=True, ensure_ascii=False) for c in graph.calls),
        "nodes": sorted(graph.nodes, key=lambda n: str(n["name"])),
    }


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_graph_matches_golden(graphs: dict[str, Graph], name: str) -> None:
    golden: Path = GOLDEN / f"tencentcloud-{name}.json"
    actual = json.dumps(_summary(graphs[name]), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1":
        golden.write_text(actual, encoding="utf-8")
    assert golden.exists(), f"{golden} missing; run with GPUCTL_UPDATE_GOLDEN=1 and review the diff"
    assert actual == golden.read_text(encoding="utf-8"), (
        f"{golden} differs; if intended, rerun with GPUCTL_UPDATE_GOLDEN=1"
    )


# ------------------------------------------------------------------------------ stack folder


@pytest.mark.parametrize(
    ("config_id", "expected_id"),
    [
        ("5e1f0c2a9b3d", "5e1f0c2a9b3d"),
        # Not set: derived from the stack's organization/project/name (sha256 of "team/gpuctl-tencentcloud/t").
        (None, "621de18879a9"),
    ],
)
def test_stack_main_builds_the_cluster_from_config(config_id: str | None, expected_id: str) -> None:
    import runpy

    import pulumi

    from tests.providers.tencent_mocks import RecordingMocks, run_under_mocks

    graph = Graph()
    pulumi.runtime.settings.ROOT.set(None)  # a fresh root stack, to read this program's exports
    pulumi.runtime.set_mocks(RecordingMocks(graph), project="gpuctl-tencentcloud", stack="t", preview=False,
                             organization="team")
    pulumi.runtime.set_config("gpuctl:spec", str(EXAMPLES / "tencentcloud-hcc-2x8.yaml"))
    if config_id is not None:
        pulumi.runtime.set_config("gpuctl:clusterId", config_id)
    pulumi.runtime.set_config("gpuctl:owner", "alice")
    # The stack reads the real clock, so the pinned creation time is an hour ago (a fixed date would
    # expire): created HH:15:42 -> terminated 8h later, rounded up to the minute: HH+8:16:00.
    created = (datetime.now(UTC) - timedelta(hours=1)).replace(minute=15, second=42, microsecond=0)
    pulumi.runtime.set_config("gpuctl:createdAt", created.strftime("%Y-%m-%dT%H:%M:%SZ"))
    expected_time = (created + timedelta(hours=8, seconds=18)).strftime("%Y-%m-%dT%H:%M:%SZ")
    root = pulumi.runtime.get_root_resource()
    assert root is not None
    exports: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(REPO / "stacks" / "tencentcloud" / "__main__.py"))
        outputs: dict[str, Any] = root.outputs  # type: ignore[attr-defined]
        return pulumi.Output.all(**{k: v for k, v in outputs.items() if k != "nodes"}).apply(exports.update)

    try:
        run_under_mocks(program)
    finally:
        pulumi.runtime.set_all_config({})
    timers = [inputs for type_, _, inputs in graph.registered if type_ == ACTION_TIMER]
    assert [t["actionTimer"]["actionTime"] for t in timers] == [expected_time, expected_time]
    tagged = [inputs["tags"] for _, _, inputs in graph.registered if "tags" in inputs]
    assert len(tagged) == 7  # VPC, subnet, security group, key pair, 2 instances, the instance role
    assert {tags["gpuctl:cluster-id"] for tags in tagged} == {expected_id}
    assert {tags["gpuctl:owner"] for tags in tagged} == {"alice"}
    assert (exports["clusterId"], exports["cluster"], exports["provider"]) == (expected_id, "hcc-v100", "tencentcloud")
    assert exports["hpcClusterId"] == "hcc-v100-hcc-id"
    assert exports["instanceRole"] == f"gpuctl-hcc-v100-{expected_id}-node"  # idle_stop_minutes: the agent's role
    assert exports["mtu"] == 8500  # the HCC bonds' MTU (fabric rdma), not the VPC's


# Pulumi's own rules for a project file's `config:` block (Project.Validate in pulumi/pulumi,
# sdk/go/common/workspace/project.go), as tests/providers/test_alicloud_component.py re-implements them;
# copied so that each cloud's tests stand alone (lead: one helper for both).
def pulumi_project_problems(project: dict[str, Any]) -> list[str]:
    problems = []
    name = project.get("name")
    if not name:
        problems.append("project is missing a 'name' attribute")
    runtime = project.get("runtime")
    if not (runtime if isinstance(runtime, str) else (runtime or {}).get("name")):
        problems.append("project is missing a 'runtime' attribute")
    for key, decl in (project.get("config") or {}).items():
        decl = decl if isinstance(decl, dict) else {"value": decl}
        if ":" not in key or key.startswith(f"{name}:"):
            continue
        if "type" in decl:
            problems.append(f"Configuration key '{key}' is not namespaced by the project and should not define a type")
        elif "default" in decl:
            problems.append(f"Configuration key '{key}' is not namespaced by the project and should not define a "
                            "default value")
        elif "value" not in decl:
            problems.append(f"Configuration key '{key}' is namespaced and must provide an attribute 'value'")
    return problems


def test_the_stack_project_file_passes_pulumis_project_validation() -> None:
    import yaml

    from toolkit.providers.tencentcloud.component import (
        CONFIG_CLUSTER_ID,
        CONFIG_CREATED_AT,
        CONFIG_OWNER,
        CONFIG_REGION,
        CONFIG_SPEC,
        PROJECT_NAME,
    )

    folder = REPO / "stacks" / "tencentcloud"
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    assert project["name"] == PROJECT_NAME == "gpuctl-tencentcloud"
    assert project["runtime"]["options"]["virtualenv"] == "../../.venv"
    assert pulumi_project_problems(project) == []
    main = (folder / "__main__.py").read_text()
    assert 'pulumi.Config("gpuctl")' in main
    example = yaml.safe_load((folder / "Pulumi.example.yaml").read_text())
    assert set(example["config"]) == {CONFIG_SPEC, CONFIG_REGION}
    text = (folder / "Pulumi.example.yaml").read_text()
    for key in (CONFIG_CLUSTER_ID, CONFIG_CREATED_AT, CONFIG_OWNER):
        assert f"# {key}:" in text
        assert f'config.get("{key.split(":")[1]}")' in main
    # No credential in the example, only its environment variable names in comments.
    assert "secret" not in {k.lower() for k in example["config"]}
