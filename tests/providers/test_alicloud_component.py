"""The Alibaba component's resource graph under Pulumi mocks (no CLI, no cloud).

Expected values are written out literally; the catalog is read, never compared with itself.
Golden summaries: tests/providers/golden/alicloud-<spec>.json; rewrite with GPUCTL_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.providers.alicloud_mocks import (
    ENI,
    ENI_ATTACHMENT,
    GOLDEN,
    INSTANCE,
    NOW,
    SG_RULE,
    SPECS,
    Graph,
    build_graph,
    spec_args,
)
from toolkit.catalog import load_catalog
from toolkit.errors import CatalogError, UsageError
from toolkit.providers.alicloud.args import GpuClusterArgs, image_ref, release_time
from toolkit.providers.base import NodeOutput
from toolkit.spec.loader import load_spec_text

pytestmark = pytest.mark.pulumi_mock

EXAMPLE = REPO / "examples" / "alicloud-erdma-2x8.yaml"
SPEC_FILES = {
    "erdma-spot": SPECS / "erdma-spot.yaml",
    "erdma-two-pools": SPECS / "erdma-two-pools.yaml",
    "tcp-monthly": SPECS / "tcp-monthly.yaml",
    "example-erdma-2x8": EXAMPLE,
}
# Resources with no `tags` argument in pulumi-alicloud 4.0.0: a rule belongs to its security
# group, an attachment to its instance and ENI; both are deleted with them.
# Attachments take no tags (pulumi-alicloud 4.0.0: RolePolicyAttachment and RamRoleAttachment have no `tags`).
UNTAGGABLE = {SG_RULE, ENI_ATTACHMENT, "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
              "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"}
GPUCTL_TAG_KEYS = {"gpuctl:cluster", "gpuctl:cluster-id", "gpuctl:owner", "gpuctl:expires", "gpuctl:managed-by"}


@pytest.fixture(scope="module")
def graphs() -> dict[str, Graph]:
    return {name: build_graph(spec_args(path)) for name, path in SPEC_FILES.items()}


# ------------------------------------------------------------------------------------- eRDMA



@pytest.fixture(autouse=True)
def _china_site(monkeypatch: pytest.MonkeyPatch) -> None:
    """The account's site (site.py), as the operator's environment gives it: spot ceilings go as given."""
    monkeypatch.setenv("ALIBABA_CLOUD_ACCOUNT_TYPE", "Domestic")

def test_erdma_spot_has_two_eris_per_ebmgn7ex_node_one_per_card(graphs: dict[str, Graph]) -> None:
    graph = graphs["erdma-spot"]
    instances = graph.of_type(INSTANCE)
    assert sorted(i.name for i in instances) == [
        "t-erdma-spot-gpu-0", "t-erdma-spot-gpu-1", "t-erdma-spot-gpu-2",
    ]
    for instance in instances:
        assert instance.inputs["network_interface_traffic_mode"] == "HighPerformance"
        assert instance.inputs["network_card_index"] == 0
    enis = graph.of_type(ENI)
    assert sorted(e.name for e in enis) == [
        "t-erdma-spot-gpu-0-eri1", "t-erdma-spot-gpu-1-eri1", "t-erdma-spot-gpu-2-eri1",
    ]
    assert {e.inputs["network_interface_traffic_mode"] for e in enis} == {"HighPerformance"}
    attachments = graph.of_type(ENI_ATTACHMENT)
    assert sorted(a.name for a in attachments) == [
        "t-erdma-spot-gpu-0-eri1-attach", "t-erdma-spot-gpu-1-eri1-attach", "t-erdma-spot-gpu-2-eri1-attach",
    ]
    assert {a.inputs["network_card_index"] for a in attachments} == {1}


def test_erdma_with_unknown_eri_quantity_gets_the_primary_eri_only(graphs: dict[str, Graph]) -> None:
    graph = graphs["erdma-two-pools"]
    assert len(graph.of_type(INSTANCE)) == 3
    for instance in graph.of_type(INSTANCE):
        assert instance.inputs["network_interface_traffic_mode"] == "HighPerformance"
        assert "network_card_index" not in instance.inputs
    assert graph.of_type(ENI) == []
    assert graph.of_type(ENI_ATTACHMENT) == []


def test_tcp_fabric_has_no_eri_at_all(graphs: dict[str, Graph]) -> None:
    graph = graphs["tcp-monthly"]
    (instance,) = graph.of_type(INSTANCE)
    assert "network_interface_traffic_mode" not in instance.inputs
    assert "queue_pair_number" not in instance.inputs
    assert graph.of_type(ENI) == []
    assert graph.nodes[0]["fabric_interfaces"] == []


def test_erdma_refuses_a_type_without_eri() -> None:
    text = (SPECS / "erdma-spot.yaml").read_text().replace("ecs.ebmgn7ex.32xlarge", "ecs.gn7i-c8g1.2xlarge")
    spec = load_spec_text(text)
    with pytest.raises(CatalogError, match=r"gn7i-c8g1.2xlarge has no eRDMA \(no ERI\)"):
        GpuClusterArgs.from_spec(spec, load_catalog("alicloud"), now=NOW, public_key="ssh-ed25519 AAAA test")


def test_unknown_type_and_foreign_image_alias_are_refused() -> None:
    base = (SPECS / "erdma-spot.yaml").read_text()
    with pytest.raises(CatalogError, match=r"ecs\.nosuch\.type is not in the alicloud catalog"):
        GpuClusterArgs.from_spec(
            load_spec_text(base.replace("ecs.ebmgn7ex.32xlarge", "ecs.nosuch.type")),
            load_catalog("alicloud"), now=NOW, public_key="ssh-ed25519 AAAA test",
        )
    with pytest.raises(CatalogError, match="image 'tencentos_3' is not available on Alibaba"):
        GpuClusterArgs.from_spec(
            load_spec_text(base.replace("alinux_3", "tencentos_3")),
            load_catalog("alicloud"), now=NOW, public_key="ssh-ed25519 AAAA test",
        )


# ------------------------------------------------------------------------------- security group


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_only_ssh_from_admin_cidr_is_open_from_outside(graphs: dict[str, Graph], name: str) -> None:
    graph = graphs[name]
    admin = spec_args(SPEC_FILES[name]).admin_cidr
    rules = graph.of_type(SG_RULE)
    assert len(rules) == 3
    assert {r.inputs["type"] for r in rules} == {"ingress"}
    from_outside = [r for r in rules if "cidr_ip" in r.inputs]
    assert len(from_outside) == 1
    (ssh,) = from_outside
    assert ssh.inputs["ip_protocol"] == "tcp"
    assert ssh.inputs["port_range"] == "22/22"
    assert ssh.inputs["cidr_ip"] == admin
    assert ipaddress.ip_network(ssh.inputs["cidr_ip"]).prefixlen >= 24
    inside = [r for r in rules if "cidr_ip" not in r.inputs]
    # Both rules inside the group name the group itself as the source, never a CIDR.
    assert sorted(r.inputs["ip_protocol"] for r in inside) == ["all", "icmp"]
    assert all(r.inputs["source_security_group_id"] == "<output>" for r in inside)
    (group,) = graph.of_type("alicloud:ecs/securityGroup:SecurityGroup")
    assert group.inputs["inner_access_policy"] == "Drop"


def test_ssh_rule_follows_admin_cidr_literally(graphs: dict[str, Graph]) -> None:
    rules = graphs["erdma-two-pools"].of_type(SG_RULE)
    assert [r.inputs["cidr_ip"] for r in rules if "cidr_ip" in r.inputs] == ["203.0.113.7/32"]


def test_world_ssh_only_when_the_spec_allows_it() -> None:
    text = (SPECS / "tcp-monthly.yaml").read_text().replace(
        "admin_cidr: 192.0.2.0/24", "admin_cidr: 0.0.0.0/0\n  allow_world_ssh: true"
    )
    args = GpuClusterArgs.from_spec(load_spec_text(text), load_catalog("alicloud"), now=NOW,
                                    public_key="ssh-ed25519 AAAA test")
    graph = build_graph(args)
    assert [r.inputs["cidr_ip"] for r in graph.of_type(SG_RULE) if "cidr_ip" in r.inputs] == ["0.0.0.0/0"]


# ------------------------------------------------------------------------- release time, billing


def test_auto_release_time_is_now_plus_ttl_on_the_minute(graphs: dict[str, Graph]) -> None:
    # NOW = 2026-11-29 09:15:42 UTC; ttl 8h -> 17:15:42, rounded up to the whole minute.
    for instance in graphs["erdma-spot"].of_type(INSTANCE):
        assert instance.inputs["auto_release_time"] == "2026-11-29T17:16:00Z"
        assert instance.inputs["tags"]["gpuctl:expires"] == "2026-11-29T17:16:00Z"


def test_shortest_ttl_is_the_api_minimum_plus_a_creation_margin(graphs: dict[str, Graph]) -> None:
    # ttl 40m, the shortest validate accepts on Alibaba: 30 minutes is the API minimum at the time
    # of the call, which comes minutes after the program starts: 09:15:42 + 40m -> 09:56:00.
    for instance in graphs["erdma-two-pools"].of_type(INSTANCE):
        assert instance.inputs["auto_release_time"] == "2026-11-29T09:56:00Z"


def test_release_time_across_midnight_and_time_zones() -> None:
    from datetime import timedelta, timezone

    beijing = timezone(timedelta(hours=8))
    start = datetime(2026, 12, 31, 23, 50, 0, tzinfo=beijing)  # 15:50 UTC
    assert f"{release_time(start, timedelta(hours=9)):%Y-%m-%dT%H:%M:%SZ}" == "2027-01-01T00:50:00Z"


def test_monthly_has_no_release_time_and_buys_the_months(graphs: dict[str, Graph]) -> None:
    (instance,) = graphs["tcp-monthly"].of_type(INSTANCE)
    assert instance.inputs["instance_charge_type"] == "PrePaid"
    assert instance.inputs["period"] == 2
    assert instance.inputs["period_unit"] == "Month"
    assert "auto_release_time" not in instance.inputs
    assert "spot_strategy" not in instance.inputs
    # The expiry tag is still written, for the reaper.
    assert instance.inputs["tags"]["gpuctl:expires"] == "2026-12-01T09:16:00Z"


def test_spot_with_price_cap(graphs: dict[str, Graph]) -> None:
    for instance in graphs["erdma-spot"].of_type(INSTANCE):
        assert instance.inputs["instance_charge_type"] == "PostPaid"
        assert instance.inputs["spot_strategy"] == "SpotWithPriceLimit"
        assert instance.inputs["spot_price_limit"] == 61.25


def test_spot_without_cap_follows_the_market_and_pay_as_you_go_has_no_spot(graphs: dict[str, Graph]) -> None:
    by_pool = {i.name: i.inputs for i in graphs["erdma-two-pools"].of_type(INSTANCE)}
    assert by_pool["t-erdma-mixed-train-0"]["spot_strategy"] == "SpotAsPriceGo"
    assert "spot_price_limit" not in by_pool["t-erdma-mixed-train-0"]
    assert by_pool["t-erdma-mixed-eval-0"]["instance_charge_type"] == "PostPaid"
    assert "spot_strategy" not in by_pool["t-erdma-mixed-eval-0"]


def test_pinned_creation_time_keeps_the_release_time_on_a_later_up() -> None:
    later = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    spec_path = SPECS / "erdma-spot.yaml"
    from toolkit.spec.loader import load_spec

    args = GpuClusterArgs.from_spec(load_spec(spec_path), load_catalog("alicloud"), now=later, created_at=NOW)
    assert args.expires_at == "2026-11-29T17:16:00Z"
    too_late = datetime(2026, 11, 29, 16, 50, 0, tzinfo=UTC)
    with pytest.raises(UsageError, match="too soon for Alibaba to accept a release time"):
        GpuClusterArgs.from_spec(load_spec(spec_path), load_catalog("alicloud"), now=too_late, created_at=NOW)


def test_jumbo_frames_only_where_the_catalog_says_so(graphs: dict[str, Graph]) -> None:
    by_name = {i.name: i.inputs for i in graphs["erdma-two-pools"].of_type(INSTANCE)}
    assert by_name["t-erdma-mixed-train-0"]["enable_jumbo_frame"] is True  # gn8v: max_mtu 8500
    assert "enable_jumbo_frame" not in by_name["t-erdma-mixed-eval-0"]  # gn8is: not stated


# ---------------------------------------------------------------------------- tags, parents, image


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_every_taggable_resource_carries_cluster_id_owner_expiry(graphs: dict[str, Graph], name: str) -> None:
    graph = graphs[name]
    spec_tags = spec_args(SPEC_FILES[name]).tags
    for resource in graph.custom():
        if resource.type in UNTAGGABLE:
            assert "tags" not in resource.inputs
            continue
        tags = resource.inputs.get("tags")
        assert tags is not None, f"{resource.type} {resource.name} has no tags"
        assert set(tags) >= GPUCTL_TAG_KEYS
        assert tags["gpuctl:cluster-id"] == "5e1f0c2a9b3d"
        assert tags == spec_tags
        if resource.type == INSTANCE:  # the disks too
            assert resource.inputs["volume_tags"] == spec_tags


def test_without_a_cluster_id_no_id_tag_is_written_and_a_bad_one_is_refused() -> None:
    # bench/pulumi_bench.py and `plan` build arguments without a stack, hence without an id.
    args = spec_args(SPECS / "erdma-spot.yaml", cluster_id=None)
    assert args.cluster_id is None
    assert "gpuctl:cluster-id" not in args.tags
    with pytest.raises(UsageError, match="cluster id 'Not An Id' is not usable as a tag value"):
        spec_args(SPECS / "erdma-spot.yaml", cluster_id="Not An Id")


def test_user_tags_are_kept_next_to_gpuctl_tags(graphs: dict[str, Graph]) -> None:
    (vpc,) = graphs["erdma-spot"].of_type("alicloud:vpc/network:Network")
    assert vpc.inputs["tags"] == {
        "project": "gpuctl-tests",
        "gpuctl:cluster": "t-erdma-spot",
        "gpuctl:cluster-id": "5e1f0c2a9b3d",
        "gpuctl:owner": "tester@example.com",
        "gpuctl:expires": "2026-11-29T17:16:00Z",
        "gpuctl:managed-by": "gpuctl",
    }


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_every_child_has_a_gpuctl_component_as_parent(graphs: dict[str, Graph], name: str) -> None:
    for resource in graphs[name].resources:
        if resource.type == "gpuctl:alicloud:GpuCluster":
            assert resource.parent is None or resource.parent.startswith("pulumi:pulumi:Stack")
            continue
        assert resource.parent is not None, resource.name
        assert resource.parent.startswith("gpuctl:alicloud:"), (resource.name, resource.parent)


def test_image_lookup_by_alias_and_fixed_id(graphs: dict[str, Graph]) -> None:
    calls = graphs["erdma-two-pools"].calls
    assert sorted(c[1]["nameRegex"] for c in calls) == [
        r"^ubuntu_22_04_x64_20G_alibase_\d{8}\.vhd$", r"^ubuntu_24_04_x64_20G_alibase_\d{8}\.vhd$"]
    assert {c[1]["owners"] for c in calls} == {"system"}
    assert graphs["tcp-monthly"].calls == []  # image id given: no lookup
    (instance,) = graphs["tcp-monthly"].of_type(INSTANCE)
    assert instance.inputs["image_id"] == "<output>"


def test_public_ip_follows_the_spec(graphs: dict[str, Graph]) -> None:
    (box,) = graphs["tcp-monthly"].of_type(INSTANCE)
    assert box.inputs["internet_max_bandwidth_out"] == 0
    assert graphs["tcp-monthly"].nodes[0]["public_ip"] is None
    assert all(n["public_ip"] == "47.0.0.1" for n in graphs["erdma-spot"].nodes)


# ----------------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_outputs_shape_fits_node_output(graphs: dict[str, Graph], name: str) -> None:
    nodes = graphs[name].nodes
    assert len(nodes) == len(graphs[name].of_type(INSTANCE))
    for node in nodes:
        parsed = NodeOutput.model_validate({**node, "ssh_host": node["public_ip"] or node["private_ip"]})
        assert parsed.name.startswith(f"{spec_args(SPEC_FILES[name]).cluster}-")


def test_outputs_list_each_eri_with_its_address(graphs: dict[str, Graph]) -> None:
    node = graphs["erdma-spot"].nodes[0]
    assert node["name"] == "t-erdma-spot-gpu-0"
    assert node["instance_type"] == "ecs.ebmgn7ex.32xlarge"
    assert [i["name"] for i in node["fabric_interfaces"]] == ["eth0", "eth1"]
    assert node["fabric_interfaces"][0]["ipv4"] == f"{node['private_ip']}/24"
    assert all(i["ipv4"].endswith("/24") for i in node["fabric_interfaces"])


def test_hostnames_are_cluster_pool_index(graphs: dict[str, Graph]) -> None:
    instances = graphs["erdma-two-pools"].of_type(INSTANCE)
    names = sorted((i.inputs["instance_name"], i.inputs["host_name"]) for i in instances)
    assert names == [
        ("t-erdma-mixed-eval-0", "t-erdma-mixed-eval-0"),
        ("t-erdma-mixed-train-0", "t-erdma-mixed-train-0"),
        ("t-erdma-mixed-train-1", "t-erdma-mixed-train-1"),
    ]


# ------------------------------------------------------- timeouts, disks, billing, names, MTU


def test_bare_metal_types_get_long_timeouts_and_other_types_the_providers(graphs: dict[str, Graph]) -> None:
    spot = graphs["erdma-spot"]  # ebmgn7ex: bare metal in the catalog
    assert {json.dumps(i.options["custom_timeouts"]) for i in spot.of_type(INSTANCE)} == {
        '{"create": "40m", "delete": "40m"}'
    }
    assert {json.dumps(a.options["custom_timeouts"]) for a in spot.of_type(ENI_ATTACHMENT)} == {
        '{"create": "15m", "delete": "15m"}'
    }
    mixed = graphs["erdma-two-pools"]  # gn8v and gn8is: not bare metal
    assert [i.options.get("custom_timeouts") for i in mixed.of_type(INSTANCE)] == [None] * 3


def test_the_engine_gets_the_timeouts_and_ignores_image_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the Pulumi engine receives (RegisterResource), not only what the program asked for."""
    from pulumi.runtime.mocks import MockMonitor

    seen: dict[str, tuple[list[str], Any]] = {}
    original: Any = MockMonitor.RegisterResource

    def register(self: Any, request: Any) -> Any:
        seen[request.name] = (list(request.ignoreChanges), request.customTimeouts)
        return original(self, request)

    monkeypatch.setattr(MockMonitor, "RegisterResource", register)
    build_graph(spec_args(SPECS / "erdma-spot.yaml"))
    ignore, timeouts = seen["t-erdma-spot-gpu-0"]
    # A newer public image matching the lookup never replaces a node (and its disk) on a later `up`.
    assert ignore == ["imageId"]
    assert (timeouts.create, timeouts.delete) == ("40m", "40m")
    ignore, timeouts = seen["t-erdma-spot-gpu-0-eri1-attach"]
    assert (ignore, timeouts.create, timeouts.delete) == ([], "15m", "15m")


# Names as the ECS API lists them (a public DescribeImages listing of us-east-1, 2024-03; provider tests at
# aliyun/terraform-provider-alicloud@v1.289.0): the alias's lookup takes the image and none of its variants.
IMAGE_NAMES = {
    "ubuntu_22_04_x64_20G_alibase_20240322.vhd": ("ubuntu_22_04", False),
    "ubuntu_22_04_uefi_x64_20G_alibase_20230515.vhd": ("ubuntu_22_04", True),
    "aliyun_3_x64_20G_alibase_20240819.vhd": ("alinux_3", False),
    "aliyun_3_9_x64_20G_alibase_20231219.vhd": ("alinux_3", False),
    "aliyun_3_9_x64_20G_uefi_alibase_20231219.vhd": ("alinux_3", True),
}
VARIANTS = [
    "ubuntu_22_04_x64_100G_with_gpu_driver_and_cuda_alibase_20251229.vhd",
    "aliyun_3_x64_20G_qboot_alibase_20230727.vhd",
    "aliyun_3_x64_20G_scc_alibase_20220225.vhd",
    "aliyun_3_9_x64_20G_dengbao_alibase_20231219.vhd",
    "aliyun_3_x64_20G_container_optimized_alibase_20251215.vhd",
    "ubuntu_22_04_x64_20G_alibase_20240322.vhd.bak",
]


def _pattern(alias: str, uefi: bool) -> str:
    pattern = image_ref(alias, uefi=uefi).name_regex
    assert pattern is not None
    return pattern


def test_the_image_lookup_takes_alibabas_names_and_none_of_their_variants() -> None:
    for name, (alias, uefi) in IMAGE_NAMES.items():
        assert re.search(_pattern(alias, uefi), name), name
        assert not re.search(_pattern(alias, not uefi), name), name
    for name in VARIANTS:
        for alias in ("ubuntu_22_04", "ubuntu_24_04", "alinux_3"):
            for uefi in (False, True):
                assert not re.search(_pattern(alias, uefi), name), (name, alias, uefi)


def test_uefi_only_bare_metal_types_look_up_uefi_images(graphs: dict[str, Graph]) -> None:
    example = [args for token, args in graphs["example-erdma-2x8"].calls if token.endswith("getImages")]
    assert [(c["nameRegex"], c["instanceType"]) for c in example] == [
        (r"^ubuntu_22_04_uefi_x64_20G_alibase_\d{8}\.vhd$", "ecs.ebmgn7ex.32xlarge")
    ]
    mixed = sorted(c["nameRegex"] for token, c in graphs["erdma-two-pools"].calls if token.endswith("getImages"))
    # gn8is / gn8v: not UEFI-only
    assert mixed == [r"^ubuntu_22_04_x64_20G_alibase_\d{8}\.vhd$", r"^ubuntu_24_04_x64_20G_alibase_\d{8}\.vhd$"]


def test_monthly_instances_can_be_deleted_and_months_are_what_the_api_sells(graphs: dict[str, Graph]) -> None:
    (monthly,) = graphs["tcp-monthly"].of_type(INSTANCE)
    assert (monthly.inputs["instance_charge_type"], monthly.inputs["force_delete"]) == ("PrePaid", True)
    assert all("force_delete" not in i.inputs for i in graphs["erdma-spot"].of_type(INSTANCE))
    text = (SPECS / "tcp-monthly.yaml").read_text()
    assert "months: 2}" in text
    with pytest.raises(CatalogError, match=r"billing.months: 10 is not a subscription length Alibaba sells"):
        GpuClusterArgs.from_spec(
            load_spec_text(text.replace("months: 2}", "months: 10}")), load_catalog("alicloud"), now=NOW,
            public_key="ssh-ed25519 AAAA test",
        )


def test_the_key_pair_name_carries_the_cluster_id(graphs: dict[str, Graph]) -> None:
    (key,) = graphs["erdma-spot"].of_type("alicloud:ecs/ecsKeyPair:EcsKeyPair")
    assert key.inputs["key_pair_name"] == "t-erdma-spot-5e1f0c2a9b3d-key"
    assert spec_args(SPECS / "erdma-spot.yaml", cluster_id=None).key_pair_name == "t-erdma-spot-key"


def test_the_mtu_is_what_the_cloud_carries() -> None:
    asked_8500 = load_spec_text((SPECS / "erdma-spot.yaml").read_text().replace("mtu: 1400", "mtu: 8500"))
    spot = GpuClusterArgs.from_spec(asked_8500, load_catalog("alicloud"), now=NOW, public_key="ssh-ed25519 AAAA t")
    # ebmgn7ex carries no jumbo frames (validate refuses 8500 there; the program never enables them).
    assert (spot.mtu, spot.requested_mtu) == (1400, 8500)
    assert [p.jumbo_frames for p in spot.pools] == [False]
    mixed = spec_args(SPECS / "erdma-two-pools.yaml")  # gn8v has jumbo frames, gn8is does not
    assert sorted((p.instance_type, p.jumbo_frames) for p in mixed.pools) == [
        ("ecs.gn8is.2xlarge", False), ("ecs.gn8v-8x.48xlarge", True)
    ]
    assert mixed.mtu == 1400
    only_gn8v = load_spec_text((SPECS / "erdma-spot.yaml").read_text()
                               .replace("ebmgn7ex.32xlarge", "gn8v-8x.48xlarge").replace("mtu: 1400", "mtu: 8500"))
    jumbo = GpuClusterArgs.from_spec(only_gn8v, load_catalog("alicloud"), now=NOW, public_key="ssh-ed25519 AAAA t")
    assert (jumbo.mtu, jumbo.requested_mtu) == (8500, None)
    tcp = spec_args(SPECS / "tcp-monthly.yaml")
    assert (tcp.mtu, tcp.requested_mtu) == (1500, None)


def test_a_pinned_owner_wins_over_the_spec_and_the_local_user() -> None:
    spec = load_spec_text((SPECS / "erdma-spot.yaml").read_text().replace("owner: tester@example.com\n", ""))
    pinned = GpuClusterArgs.from_spec(spec, load_catalog("alicloud"), now=NOW, public_key="k", owner="alice")
    assert pinned.tags["gpuctl:owner"] == "alice"


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
        "invokes": sorted(json.dumps(c, sort_keys=True) for c in graph.calls),
        "nodes": sorted(graph.nodes, key=lambda n: str(n["name"])),
    }


@pytest.mark.parametrize("name", list(SPEC_FILES))
def test_graph_matches_golden(graphs: dict[str, Graph], name: str) -> None:
    golden: Path = GOLDEN / f"alicloud-{name}.json"
    actual = json.dumps(_summary(graphs[name]), indent=2, sort_keys=True) + "\n"
    if os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1":
        golden.write_text(actual)
    assert golden.exists(), f"{golden} missing; run with GPUCTL_UPDATE_GOLDEN=1 and review the diff"
    assert actual == golden.read_text(), f"{golden} differs; if intended, rerun with GPUCTL_UPDATE_GOLDEN=1"


# ------------------------------------------------------------------------------ stack folder


@pytest.mark.parametrize(
    ("config_id", "expected_id"),
    [
        ("5e1f0c2a9b3d", "5e1f0c2a9b3d"),  # `pulumi config set gpuctl:clusterId ...`, or kept there by gpuctl
        # Not set: derived from the stack's organization/project/name (sha256 of "team/gpuctl-alicloud/t"),
        # so every run of this stack tags the same id.
        (None, "0d26ae954a1c"),
    ],
)
def test_stack_main_builds_the_cluster_from_config(config_id: str | None, expected_id: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import runpy

    monkeypatch.setenv("ALIBABA_CLOUD_ACCOUNT_TYPE", "Domestic")  # the spec's spot ceiling needs the site

    import pulumi

    from tests.providers.alicloud_mocks import RecordingMocks, run_under_mocks

    graph = Graph()
    pulumi.runtime.settings.ROOT.set(None)  # a fresh root stack, to read this program's exports
    pulumi.runtime.set_mocks(RecordingMocks(graph), project="gpuctl-alicloud", stack="t", preview=False,
                             organization="team")
    pulumi.runtime.set_config("gpuctl:spec", str(SPECS / "erdma-spot.yaml"))
    if config_id is not None:
        pulumi.runtime.set_config("gpuctl:clusterId", config_id)
    # The stack reads the real clock, so the pinned creation time is an hour ago (a fixed date
    # would expire): created 10:15:42 -> released 8h later, rounded up to the minute: 18:16:00.
    created = (datetime.now(UTC) - timedelta(hours=1)).replace(minute=15, second=42, microsecond=0)
    pulumi.runtime.set_config("gpuctl:createdAt", created.strftime("%Y-%m-%dT%H:%M:%SZ"))
    expected_release = (created + timedelta(hours=8, seconds=18)).strftime("%Y-%m-%dT%H:%M:%SZ")
    root = pulumi.runtime.get_root_resource()
    assert root is not None
    exports: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(REPO / "stacks" / "alicloud" / "__main__.py"))
        outputs: dict[str, Any] = root.outputs  # type: ignore[attr-defined]
        return pulumi.Output.all(**{k: v for k, v in outputs.items() if k != "nodes"}).apply(exports.update)

    try:
        run_under_mocks(program)
    finally:
        pulumi.runtime.set_all_config({})
    instances = {name: inputs for type_, name, inputs in graph.registered if type_ == INSTANCE}
    assert sorted(instances) == ["t-erdma-spot-gpu-0", "t-erdma-spot-gpu-1", "t-erdma-spot-gpu-2"]
    # createdAt from the stack config anchors the release time, not the moment the program ran.
    assert {i["autoReleaseTime"] for i in instances.values()} == {expected_release}
    # The cluster id is on every resource that takes tags, and exported.
    tagged = [inputs["tags"] for _, _, inputs in graph.registered if "tags" in inputs]
    assert len(tagged) == 10  # VPC, vSwitch, security group, key pair, 3 instances, 3 secondary ERIs
    assert {tags["gpuctl:cluster-id"] for tags in tagged} == {expected_id}
    assert exports["clusterId"] == expected_id
    assert exports["cluster"] == "t-erdma-spot"
    # ebmgn7ex carries no jumbo frames: the spec asks 1400, which is what is exported and configured.
    assert exports["mtu"] == 1400
    keys = [inputs["keyPairName"] for type_, _, inputs in graph.registered if type_.endswith("EcsKeyPair")]
    assert keys == [f"t-erdma-spot-{expected_id}-key"]


# Pulumi's own rules for a project file's `config:` block (Project.Validate in pulumi/pulumi,
# sdk/go/common/workspace/project.go): a key is namespaced by the project when it has no ':' or
# starts with '<project>:'. Such a key may be typed (an array needs `items`, a default must fit the
# type); any other key must have no `type`, no `default`, and must give a `value`.
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
        if "default" in decl and "value" in decl:
            problems.append(f"project config '{key}' cannot have both a 'default' and 'value' attribute")
        if ":" not in key or key.startswith(f"{name}:"):
            if decl.get("type") == "array" and "items" not in decl:
                problems.append(f"The configuration key '{key}' declares an array but does not specify the "
                                "underlying type via the 'items' attribute")
        elif "type" in decl:
            problems.append(f"Configuration key '{key}' is not namespaced by the project and should not define a type")
        elif "default" in decl:
            problems.append(f"Configuration key '{key}' is not namespaced by the project and should not define a "
                            "default value. Did you mean to use the 'value' attribute instead of 'default'?")
        elif "value" not in decl:
            problems.append(f"Configuration key '{key}' is namespaced and must provide an attribute 'value'")
    return problems


def test_the_stack_project_file_passes_pulumis_project_validation() -> None:
    import yaml

    from toolkit.providers.alicloud.driver import PROJECT_NAME
    from toolkit.providers.pulumi.pins import CONFIG_CLUSTER_ID, CONFIG_CREATED_AT, CONFIG_OWNER

    folder = REPO / "stacks" / "alicloud"
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    assert project["name"] == PROJECT_NAME == "gpuctl-alicloud"
    assert pulumi_project_problems(project) == []
    # The file this replaced: Pulumi refused it before running anything.
    assert pulumi_project_problems(
        {"name": "gpuctl-alicloud", "runtime": "python", "config": {"gpuctl:spec": {"type": "string"}}}
    ) == ["Configuration key 'gpuctl:spec' is not namespaced by the project and should not define a type"]
    # The program reads the `gpuctl` namespace, where `gpuctl up` keeps its pins, and the example
    # stack file sets those keys (secrets never: no credential key in it).
    main = (folder / "__main__.py").read_text()
    assert 'pulumi.Config("gpuctl")' in main
    example = yaml.safe_load((folder / "Pulumi.example.yaml").read_text())
    assert "gpuctl:spec" in example["config"]
    text = (folder / "Pulumi.example.yaml").read_text()
    for key in (CONFIG_CLUSTER_ID, CONFIG_CREATED_AT, CONFIG_OWNER):
        assert f"# {key}:" in text
        assert f'config.get("{key.split(":")[1]}")' in main

