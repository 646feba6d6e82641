"""Catalog checks: what the clouds sell decides what a spec may ask for."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.catalog.checks import check_spec
from toolkit.spec import load_spec_text

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1ZHVtbXlrZXlmb3J0ZXN0c29ubHkwMDAwMDAwMDAw test\n"


def cloud_spec(
    tmp_path: Path,
    *,
    provider: str = "alicloud",
    instance_type: str = "ecs.ebmgn7ex.32xlarge",
    fabric: str = "erdma",
    mtu: int = 8500,
    extra: str = "",
    billing: str = "{mode: pay_as_you_go}",
    key_text: str = KEY,
) -> str:
    key = tmp_path / "id.pub"
    key.write_text(key_text)
    return f"""\
name: t
provider: {provider}
region: cn-beijing
zone: cn-beijing-l
node_pools:
  - name: gpu
    instance_type: {instance_type}
    count: 2
    billing: {billing}
network:
  fabric: {fabric}
  mtu: {mtu}
  admin_cidr: 203.0.113.0/24
{extra}ssh:
  public_key: {key}
lifecycle:
  ttl: 8h
  idle_stop_minutes: 60
"""


def check(text: str) -> tuple[list[str], list[str]]:
    result = check_spec(load_spec_text(text), source="s.yaml")
    return result.problems, result.warnings


def test_erdma_type_with_8500_passes(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path))
    assert problems == []


def test_erdma_on_a_type_without_eri_is_refused(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, instance_type="ecs.gn7i-c8g1.2xlarge"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: ecs.gn7i-c8g1.2xlarge has no eRDMA interface (ERI) support; "
        "pick a type with eRDMA (`gpuctl catalog alicloud --fabric erdma`) or set network.fabric: tcp"
    ]


def test_erdma_mtu_must_be_8500_or_1400(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, mtu=1500))
    assert len(problems) == 1
    assert problems[0].startswith("s.yaml: network.mtu: 1500 with eRDMA: Alibaba requires 8500 (jumbo frames) or 1400")
    problems, warnings = check(cloud_spec(tmp_path, mtu=1400))
    assert problems == []
    assert any("gpuctl turns LL128 off at this MTU" in w for w in warnings)


def test_erdma_is_alibaba_only(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, provider="tencentcloud", instance_type="GT4.41XLARGE948"))
    assert problems[0] == (
        "s.yaml: network.fabric: erdma is Alibaba Cloud's elastic RDMA; provider tencentcloud cannot provide it "
        "(use rdma on tencentcloud)"
    )


def test_tencent_rdma_needs_an_rdma_type(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, provider="tencentcloud", instance_type="GT4.41XLARGE948", fabric="rdma"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: GT4.41XLARGE948 has no RoCE/InfiniBand RDMA NICs; "
        "use an HCC type (HCCPNV4h, HCCPNV5 ...)"
    ]


def test_unknown_type_suggests_close_names(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, instance_type="ecs.ebmgn7ex.32xlarg"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'ecs.ebmgn7ex.32xlarg' is not a GPU instance type gpuctl knows "
        "for alicloud; did you mean ecs.ebmgn7ex.32xlarge, ecs.ebmgn7ix.32xlarge, ecs.ebmgn8is.32xlarge?"
    ]


def test_private_key_given_as_public_key_is_refused(tmp_path: Path) -> None:
    private = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    problems, _ = check(cloud_spec(tmp_path, key_text=private))
    assert problems == [
        f"s.yaml: ssh.public_key: {tmp_path / 'id.pub'} is a PRIVATE key; give the matching .pub file and keep "
        "the private key to yourself"
    ]


def test_risky_choices_are_warned(tmp_path: Path) -> None:
    text = cloud_spec(
        tmp_path, billing="{mode: spot}", instance_type="ecs.gn7i-c8g1.2xlarge", fabric="tcp", mtu=1500
    ).replace("203.0.113.0/24", "0.0.0.0/0\n  allow_world_ssh: true")
    text = text.replace("ttl: 8h", "ttl: 3d")
    problems, warnings = check(text)
    assert problems == []
    assert warnings == [
        "s.yaml: node_pools[0] (gpu).billing: spot without spot_max_price_per_hour: you pay the market price, "
        "up to the pay-as-you-go price; set a ceiling",
        "s.yaml: node_pools[0] (gpu).billing: spot nodes can be reclaimed at any time; a multi-node job loses all "
        "ranks when one node goes",
        "s.yaml: lifecycle.ttl: 3d is longer than a day; a forgotten GPU cluster bills until then",
        "s.yaml: network.admin_cidr: 0.0.0.0/0 with allow_world_ssh: SSH is open to the whole internet",
    ]


@pytest.mark.parametrize(
    ("fabric", "expected"),
    [
        (
            "erdma",
            "s.yaml: network.fabric: erdma cannot run in the local lab (no RDMA hardware or Soft-RoCE here); "
            "use fabric: tcp — nodes still replay real RDMA captures for detection and tuning",
        ),
    ],
)
def test_local_lab_runs_tcp_only(fabric: str, expected: str) -> None:
    text = f"""\
name: lab
provider: local
node_pools: [{{name: n, instance_type: lab, count: 2}}]
network: {{fabric: {fabric}, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
"""
    problems, _ = check(text)
    assert problems == [expected]
