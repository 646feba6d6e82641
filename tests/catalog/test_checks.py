"""Catalog checks: what the clouds sell decides what a spec may ask for."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from toolkit import hints
from toolkit.catalog.checks import check_spec
from toolkit.spec import load_spec_text

REPO = Path(__file__).resolve().parents[2]

# ECDSA, since Alibaba's ImportKeyPair takes no ed25519 key; RSA for Tencent, whose ImportKeyPair takes RSA only.
KEY = (Path(__file__).resolve().parents[1] / "providers" / "specs" / "test_ecdsa.pub").read_text()
RSA_KEY = (Path(__file__).resolve().parents[1] / "providers" / "specs" / "test_rsa.pub").read_text()


def cloud_spec(
    tmp_path: Path,
    *,
    provider: str = "alicloud",
    instance_type: str = "ecs.ebmgn7ex.32xlarge",
    fabric: str = "erdma",
    mtu: int | None = None,
    extra: str = "",
    billing: str = "{mode: pay_as_you_go}",
    key_text: str | None = None,
    region: str | None = None,
    zone: str | None = None,
    pool_extra: str = "",
    ttl: str = "8h",
) -> str:
    key = tmp_path / "id.pub"
    key.write_text(key_text if key_text is not None else (KEY if provider == "alicloud" else RSA_KEY))
    if mtu is None:  # ebmgn7ex (the default type) carries no jumbo frames: eRDMA runs at 1400 there
        mtu = 1400 if provider == "alicloud" else 8500
    # HCC types have local disks, which Tencent's no-charge stop excludes: release when idle there.
    idle_action = "  idle_action: release\n" if provider == "tencentcloud" else ""
    if region is None:
        region = "cn-beijing" if provider == "alicloud" else "ap-shanghai"
    if zone is None:
        zone = "cn-beijing-l" if provider == "alicloud" else "ap-shanghai-5"
    return f"""\
name: t
provider: {provider}
region: {region}
zone: {zone}
node_pools:
  - name: gpu
    instance_type: {instance_type}
    count: 2
    billing: {billing}
{pool_extra}network:
  fabric: {fabric}
  mtu: {mtu}
  admin_cidr: 203.0.113.0/24
{extra}ssh:
  public_key: {key}
lifecycle:
  ttl: {ttl}
  idle_stop_minutes: 60
{idle_action}"""


def check(text: str) -> tuple[list[str], list[str]]:
    result = check_spec(load_spec_text(text), source="s.yaml")
    return result.problems, result.warnings


def test_erdma_type_with_8500_passes(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, instance_type="ecs.gn8v-8x.48xlarge", mtu=8500))
    assert problems == []
    problems, _ = check(cloud_spec(tmp_path))  # ebmgn7ex at 1400
    assert problems == []


def test_erdma_on_a_type_without_eri_is_refused(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, instance_type="ecs.gn7i-c8g1.2xlarge"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: ecs.gn7i-c8g1.2xlarge has no eRDMA interface (ERI) support; "
        f"pick a type with eRDMA (`{hints.command('catalog', 'alicloud', '--fabric', 'erdma')}`) "
        "or set network.fabric: tcp"
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
        f"use an HCC type (`{hints.command('catalog', 'tencentcloud', '--fabric', 'rdma')}` lists them)"
    ]


def test_unknown_type_suggests_close_names(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, instance_type="ecs.ebmgn7ex.32xlarg"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'ecs.ebmgn7ex.32xlarg' cannot be an instance type of Alibaba "
        "Cloud: their names are ecs.<family>.<size>, e.g. ecs.ebmgn7ex.32xlarge or ecs.gn7i-c8g1.2xlarge; did you "
        "mean ecs.ebmgn7ex.32xlarge?"
    ]
    problems, _ = check(cloud_spec(tmp_path, instance_type="ecs.gn7i-c8g1.4xlarge"))  # a real form, not in the catalog
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'ecs.gn7i-c8g1.4xlarge' is not a GPU instance type gpuctl knows "
        "for alicloud; did you mean ecs.gn7i-c8g1.2xlarge, ecs.gn7i-c16g1.4xlarge?"
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
        "s.yaml: node_pools[0] (gpu).billing: Alibaba reclaims a spot instance with 5 minutes' notice (an ECS system "
        "event and the metadata's instance/spot/termination-time); set lifecycle.on_interruption to checkpoint in "
        "that window",
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


# --- What the provider cannot use: images, disk categories, zones, a too-short TTL -----------------


@pytest.mark.parametrize(
    ("provider", "image", "expected"),
    [
        (
            "alicloud",
            "ubuntu_20_04",
            "s.yaml: node_pools[0] (gpu).image: 'ubuntu_20_04' is neither an image gpuctl knows for alicloud "
            "(alinux_3, ubuntu_22_04, ubuntu_24_04) nor an image id of the form m-xxxxxxxx; use one of those",
        ),
        (
            "alicloud",
            "img-pi0ii46r",
            "s.yaml: node_pools[0] (gpu).image: 'img-pi0ii46r' is neither an image gpuctl knows for alicloud "
            "(alinux_3, ubuntu_22_04, ubuntu_24_04) nor an image id of the form m-xxxxxxxx; use one of those",
        ),
        (
            "alicloud",
            "M-UPPER",
            "s.yaml: node_pools[0] (gpu).image: 'M-UPPER' is neither an image gpuctl knows for alicloud "
            "(alinux_3, ubuntu_22_04, ubuntu_24_04) nor an image id of the form m-xxxxxxxx; use one of those",
        ),
        (
            "tencentcloud",
            "alinux_3",
            "s.yaml: node_pools[0] (gpu).image: 'alinux_3' is neither an image gpuctl knows for tencentcloud "
            "(tencentos_3, ubuntu_22_04, ubuntu_24_04) nor an image id of the form img-xxxxxxxx; use one of those",
        ),
        (
            "tencentcloud",
            "m-2ze0kbu6w2z5z6b0lp5e",
            "s.yaml: node_pools[0] (gpu).image: 'm-2ze0kbu6w2z5z6b0lp5e' is neither an image gpuctl knows for "
            "tencentcloud (tencentos_3, ubuntu_22_04, ubuntu_24_04) nor an image id of the form img-xxxxxxxx; "
            "use one of those",
        ),
    ],
)
def test_an_image_the_provider_cannot_use_is_refused(tmp_path: Path, provider: str, image: str, expected: str) -> None:
    instance_type = "ecs.ebmgn7ex.32xlarge" if provider == "alicloud" else "HCCG5v.24XLARGE384"
    fabric = "erdma" if provider == "alicloud" else "rdma"
    text = cloud_spec(
        tmp_path, provider=provider, instance_type=instance_type, fabric=fabric, pool_extra=f"    image: {image}\n"
    )
    problems, _ = check(text)
    assert problems == [expected]


@pytest.mark.parametrize(
    ("provider", "image", "expected"),
    [
        ("alicloud", "ubuntu_22_04",
         "s.yaml: node_pools[0] (gpu).gpu_stack: image says the image carries the GPU driver, but 'ubuntu_22_04' is "
         "gpuctl's name for alicloud's plain OS image, which has none; set node_pools[0] (gpu).image to the id of an "
         "image that carries it (m-xxxxxxxx: a GPU image of the cloud's, or one you made) or gpu_stack: install"),
        ("tencentcloud", "tencentos_3",
         "s.yaml: node_pools[0] (gpu).gpu_stack: image says the image carries the GPU driver, but 'tencentos_3' is "
         "gpuctl's name for tencentcloud's plain OS image, which has none; set node_pools[0] (gpu).image to the id of "
         "an image that carries it (img-xxxxxxxx: a GPU image of the cloud's, or one you made) or gpu_stack: install"),
    ],
)
def test_an_image_stack_on_a_plain_os_image_is_refused(tmp_path: Path, provider: str, image: str,
                                                       expected: str) -> None:
    instance_type = "ecs.ebmgn7ex.32xlarge" if provider == "alicloud" else "HCCG5v.24XLARGE384"
    fabric = "erdma" if provider == "alicloud" else "rdma"
    text = cloud_spec(tmp_path, provider=provider, instance_type=instance_type, fabric=fabric,
                      pool_extra=f"    image: {image}\n    gpu_stack: image\n")
    problems, _ = check(text)
    assert problems == [expected]


@pytest.mark.parametrize(("provider", "image"),
                         [("alicloud", "m-2ze0kbu6w2z5z6b0lp5e"), ("tencentcloud", "img-pi0ii46r")])
def test_an_image_stack_on_an_image_id_passes(tmp_path: Path, provider: str, image: str) -> None:
    instance_type = "ecs.ebmgn7ex.32xlarge" if provider == "alicloud" else "HCCG5v.24XLARGE384"
    fabric = "erdma" if provider == "alicloud" else "rdma"
    text = cloud_spec(tmp_path, provider=provider, instance_type=instance_type, fabric=fabric,
                      pool_extra=f"    image: {image}\n    gpu_stack: image\n")
    assert check(text)[0] == []


@pytest.mark.parametrize(
    ("provider", "image"),
    [
        ("alicloud", "ubuntu_22_04"),
        ("alicloud", "alinux_3"),
        ("alicloud", "m-2ze0kbu6w2z5z6b0lp5e"),
        ("tencentcloud", "tencentos_3"),
        ("tencentcloud", "ubuntu_22_04"),
        ("tencentcloud", "img-pi0ii46r"),
    ],
)
def test_aliases_and_image_ids_of_the_provider_pass(tmp_path: Path, provider: str, image: str) -> None:
    instance_type = "ecs.ebmgn7ex.32xlarge" if provider == "alicloud" else "HCCG5v.24XLARGE384"
    fabric = "erdma" if provider == "alicloud" else "rdma"
    text = cloud_spec(
        tmp_path, provider=provider, instance_type=instance_type, fabric=fabric, pool_extra=f"    image: {image}\n"
    )
    problems, _ = check(text)
    assert problems == []


def test_a_disk_category_of_another_cloud_is_refused(tmp_path: Path) -> None:
    text = cloud_spec(tmp_path, pool_extra="    system_disk: {category: CLOUD_BSSD}\n")
    problems, _ = check(text)
    assert problems == [
        "s.yaml: node_pools[0] (gpu).system_disk.category: 'CLOUD_BSSD' is not a system disk category of alicloud; "
        "use one of cloud_essd, cloud_essd_entry, cloud_auto, cloud_ssd, cloud_efficiency, cloud"
    ]
    text = cloud_spec(
        tmp_path,
        provider="tencentcloud",
        instance_type="HCCG5v.24XLARGE384",
        fabric="rdma",
        pool_extra="    system_disk: {category: cloud_essd}\n",
    )
    problems, _ = check(text)
    assert problems == [
        "s.yaml: node_pools[0] (gpu).system_disk.category: 'cloud_essd' is not a system disk category of tencentcloud; "
        "use one of CLOUD_PREMIUM, CLOUD_SSD, CLOUD_BSSD, CLOUD_HSSD, CLOUD_TSSD, CLOUD_BASIC, LOCAL_BASIC, LOCAL_SSD"
    ]


def test_a_misspelt_disk_category_gets_a_suggestion(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, pool_extra="    system_disk: {category: cloud_esd}\n"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).system_disk.category: 'cloud_esd' is not a system disk category of alicloud; "
        "did you mean cloud_essd? use one of cloud_essd, cloud_essd_entry, cloud_auto, cloud_ssd, cloud_efficiency, "
        "cloud"
    ]


@pytest.mark.parametrize(("instance_type", "category"), [
    ("ecs.ebmgn7ex.32xlarge", "cloud_essd"), ("ecs.ebmgn7ex.32xlarge", "cloud_auto"),
    ("ecs.gn6i-c4g1.xlarge", "cloud_efficiency"), ("ecs.gn6i-c4g1.xlarge", "cloud_ssd"),
])
def test_alibaba_disk_categories_pass(tmp_path: Path, instance_type: str, category: str) -> None:
    problems, _ = check(cloud_spec(tmp_path, instance_type=instance_type, fabric="tcp",
                                   pool_extra=f"    system_disk: {{category: {category}}}\n"))
    assert problems == []


@pytest.mark.parametrize(
    ("provider", "region", "zone", "expected"),
    [
        (
            "alicloud",
            "cn-beijing",
            "cn-hangzhou-h",
            "s.yaml: zone: cn-hangzhou-h is not a zone of region cn-beijing; alicloud zone ids are the region id and "
            "a zone suffix, e.g. cn-beijing-h or ap-southeast-1a: set zone to one in cn-beijing or region to the "
            "zone's region",
        ),
        (
            "alicloud",
            "cn-beijing",
            "cn-beijing-3",
            "s.yaml: zone: cn-beijing-3 is not a zone of region cn-beijing; alicloud zone ids are the region id and "
            "a zone suffix, e.g. cn-beijing-h or ap-southeast-1a: set zone to one in cn-beijing or region to the "
            "zone's region",
        ),
        (
            "alicloud",
            "cn-beijing",
            "cn-beijing",
            "s.yaml: zone: cn-beijing is not a zone of region cn-beijing; alicloud zone ids are the region id and "
            "a zone suffix, e.g. cn-beijing-h or ap-southeast-1a: set zone to one in cn-beijing or region to the "
            "zone's region",
        ),
        (
            "tencentcloud",
            "ap-shanghai",
            "ap-guangzhou-3",
            "s.yaml: zone: ap-guangzhou-3 is not a zone of region ap-shanghai; tencentcloud zone ids are the region id "
            "and a zone suffix, e.g. ap-shanghai-5: set zone to one in ap-shanghai or region to the zone's region",
        ),
        (
            "tencentcloud",
            "ap-shanghai",
            "ap-shanghai-e",
            "s.yaml: zone: ap-shanghai-e is not a zone of region ap-shanghai; tencentcloud zone ids are the region id "
            "and a zone suffix, e.g. ap-shanghai-5: set zone to one in ap-shanghai or region to the zone's region",
        ),
    ],
)
def test_a_zone_outside_the_region_is_refused(
    tmp_path: Path, provider: str, region: str, zone: str, expected: str
) -> None:
    instance_type = "ecs.ebmgn7ex.32xlarge" if provider == "alicloud" else "HCCG5v.24XLARGE384"
    fabric = "erdma" if provider == "alicloud" else "rdma"
    text = cloud_spec(tmp_path, provider=provider, instance_type=instance_type, fabric=fabric, region=region, zone=zone)
    problems, _ = check(text)
    assert problems == [expected]


@pytest.mark.parametrize(
    ("provider", "region", "zone"),
    [
        ("alicloud", "cn-wulanchabu", "cn-wulanchabu-c"),
        ("alicloud", "ap-southeast-1", "ap-southeast-1a"),
        ("tencentcloud", "ap-shanghai", "ap-shanghai-5"),
        ("tencentcloud", "ap-guangzhou", "ap-guangzhou-3"),
    ],
)
def test_zones_of_the_region_pass(tmp_path: Path, provider: str, region: str, zone: str) -> None:
    instance_type = "ecs.ebmgn7ex.32xlarge" if provider == "alicloud" else "HCCG5v.24XLARGE384"
    fabric = "erdma" if provider == "alicloud" else "rdma"
    text = cloud_spec(tmp_path, provider=provider, instance_type=instance_type, fabric=fabric, region=region, zone=zone)
    problems, _ = check(text)
    assert problems == []


def test_alibaba_ttl_under_40_minutes_is_refused_at_validate(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, ttl="30m"))
    assert problems == [
        "s.yaml: lifecycle.ttl: 30m is under 40m for alicloud: Alibaba refuses an auto-release time sooner than 30m "
        "ahead and gpuctl keeps a 10m margin for creating the network first; set lifecycle.ttl: 40m or more"
    ]
    problems, _ = check(cloud_spec(tmp_path, ttl="40m"))
    assert problems == []
    # Tencent's floor is its own (the ActionTimer): the next test.


TENCENT_TIMER = ("on tencentcloud: each node's ActionTimer, which terminates it at the TTL, must be set more than 5 "
                 "minutes ahead (ImportInstancesActionTimer, https://cloud.tencent.com/document/api/213/103949) and "
                 "is set once the node exists, which gpuctl allows")


def test_tencent_ttl_shorter_than_the_action_timer_needs_is_refused_at_validate(tmp_path: Path) -> None:
    """A TTL `up` would refuse (ActionTime > now + 5 min, set after the instance's create timeout)
    is refused by validate and plan, with the rule; plan no longer stops at its year-2000 anchor."""
    hcc = cloud_spec(tmp_path, provider="tencentcloud", instance_type="HCCG5v.24XLARGE384", fabric="rdma", ttl="30m")
    problems, _ = check(hcc)
    assert problems == [
        f"s.yaml: lifecycle.ttl: 30m is under 45m for node pool gpu (HCCG5v.24XLARGE384) {TENCENT_TIMER} "
        "40 minutes for a "
        "bare-metal type; set lifecycle.ttl: 45m or more"
    ]
    assert check(hcc.replace("ttl: 30m", "ttl: 45m"))[0] == []
    # A type that is not bare metal needs 5 + 15 minutes, under the spec's own 30-minute floor.
    gt4 = cloud_spec(tmp_path, provider="tencentcloud", instance_type="GT4.4XLARGE96", fabric="tcp", mtu=1500,
                     ttl="30m")
    assert check(gt4)[0] == []
    # Monthly nodes get no ActionTimer.
    monthly = cloud_spec(tmp_path, provider="tencentcloud", instance_type="HCCG5v.24XLARGE384", fabric="rdma",
                         ttl="30m", billing="{mode: monthly, months: 1}")
    assert check(monthly)[0] == []


def test_the_local_lab_builds_debian_12_only() -> None:
    text = """\
name: lab
provider: local
node_pools: [{name: n, instance_type: lab, count: 2, image: ubuntu_22_04}]
network: {fabric: tcp, admin_cidr: 127.0.0.0/8}
lifecycle: {ttl: 2h}
"""
    problems, _ = check(text)
    assert problems == [
        "s.yaml: node_pools[0] (n).image: 'ubuntu_22_04': the local lab builds debian_12 roots only; "
        "set image: debian_12, baked:<name> (gpuctl image build) or remove it"
    ]
    assert check(text.replace("ubuntu_22_04", "debian_12"))[0] == []
    assert check(text.replace(", image: ubuntu_22_04", ""))[0] == []


# --- The key file: never hang, never read more than a key's worth -------------------------------


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        ("zero", "s.yaml: ssh.public_key: /dev/zero: is a character device, not a regular file; give the path of a "
                 "public key file (.pub)"),
        ("fifo", "s.yaml: ssh.public_key: {path}: is a named pipe (FIFO), not a regular file; give the path of a "
                 "public key file (.pub)"),
        ("dir", "s.yaml: ssh.public_key: {path}: is a directory, not a regular file; give the path of a public key "
                "file (.pub)"),
        ("huge", "s.yaml: ssh.public_key: {path}: 95.4 MiB is far too large for a public key file (.pub) "
                 "(at most 16384 bytes); give the path of your .pub file"),
    ],
)
def test_a_key_path_that_is_not_a_small_regular_file_is_refused_without_reading(
    tmp_path: Path, make: str, expected: str
) -> None:
    path = tmp_path / "thing"
    if make == "zero":
        path = Path("/dev/zero")
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "dir":
        path.mkdir()
    else:
        with path.open("wb") as handle:
            handle.truncate(100_000_000)  # sparse: no disk used
    text = cloud_spec(tmp_path).replace(f"public_key: {tmp_path / 'id.pub'}", f"public_key: {path}")
    problems = run_with_timeout(lambda: check(text)[0])
    assert problems == [expected.format(path=path)]


def test_a_key_file_with_two_keys_is_refused(tmp_path: Path) -> None:
    problems, _ = check(cloud_spec(tmp_path, key_text=KEY + KEY))
    assert problems == [
        f"s.yaml: ssh.public_key: {tmp_path / 'id.pub'} holds more than one line or control characters; give a .pub "
        "file with exactly one OpenSSH public key"
    ]


def run_with_timeout(call: Callable[[], list[str]], timeout: float = 10.0) -> list[str]:
    """Run `call` in a thread; a hang (a regression that opens a FIFO blocking) fails the test."""
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(call())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"the check did not return within {timeout}s (it hangs on this path)"
    if errors:
        raise errors[0]
    return results[0]


def test_a_missing_key_file_says_what_to_give(tmp_path: Path) -> None:
    text = cloud_spec(tmp_path).replace(f"public_key: {tmp_path / 'id.pub'}", f"public_key: {tmp_path / 'nope.pub'}")
    problems, _ = check(text)
    assert problems == [
        f"s.yaml: ssh.public_key: {tmp_path / 'nope.pub'}: no such file; give the path of your .pub file"
    ]


def test_the_examples_placeholders_are_pointed_out() -> None:
    """A spec copied from examples/ still names the example key and a documentation address range."""
    from toolkit.catalog.checks import check_spec
    from toolkit.spec.loader import load_spec

    result = check_spec(load_spec(REPO / "examples/alicloud-erdma-2x8.yaml"), source="s.yaml")
    assert result.problems == []
    assert ("s.yaml: ssh.public_key: " + str(REPO / "examples/ssh/example_ecdsa.pub") + " is the example key "
            "shipped in examples/ssh/ (a placeholder: you do not hold its private key); give your own .pub file "
            "(`ssh-keygen -t ecdsa` makes one)") in result.warnings
    assert ("s.yaml: network.admin_cidr: 203.0.113.0/24 is a documentation range (RFC 5737/3849): nobody can SSH in "
            "from it; set your office or VPN range") in result.warnings


# ------------------------------------------------------------------ Alibaba-only limits


def test_alicloud_subscription_months_are_what_runinstances_sells(tmp_path: Path) -> None:
    def monthly(months: int) -> str:
        # No idle stop: refused on a subscription (tests/providers/test_alicloud_billing_site.py).
        text = cloud_spec(tmp_path, billing=f"{{mode: monthly, months: {months}}}")
        return text.replace("  idle_stop_minutes: 60\n", "")

    for months in (1, 9, 12, 24, 36):
        problems, _ = check(monthly(months))
        assert problems == [], months
    problems, _ = check(monthly(10))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).billing.months: 10 is not a subscription length Alibaba sells; RunInstances "
        "takes 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 24, 36, 48, 60 months"
    ]


def test_alicloud_vswitch_must_hold_every_node_and_eri_address(tmp_path: Path) -> None:
    # ebmgn7ex: 2 ERIs per node (one per card) -> 2 addresses per node. A /24 has 256 - 4 = 252 usable
    # (Alibaba reserves the first and the last three): 126 nodes fit, 127 do not.
    fits = cloud_spec(tmp_path).replace("count: 2", "count: 126")
    problems, _ = check(fits)
    assert problems == []
    too_many = cloud_spec(tmp_path).replace("count: 2", "count: 127")
    problems, _ = check(too_many)
    assert problems == [
        "s.yaml: network.subnet_cidr: 10.42.0.0/24 has 252 usable addresses (Alibaba reserves the first and the "
        "last three of a vSwitch) but the cluster needs 254 (each node's primary interface and one per "
        "secondary ERI); set network.subnet_cidr to a larger block inside network.vpc_cidr"
    ]
    wider = too_many.replace("  admin_cidr:", "  subnet_cidr: 10.42.0.0/23\n  admin_cidr:")
    assert check(wider)[0] == []
    # TCP: one address per node.
    tcp = cloud_spec(tmp_path, fabric="tcp", mtu=1500).replace("count: 2", "count: 252")
    assert check(tcp)[0] == []


def test_alicloud_plan_says_which_mtu_is_carried_where_jumbo_frames_are_not_enabled(tmp_path: Path) -> None:
    # gn8is: no page read says whether it carries jumbo frames. One message, with the MTU gpuctl configures.
    _, warnings = check(cloud_spec(tmp_path, instance_type="ecs.gn8is.2xlarge", mtu=8500))
    mtu_lines = [w for w in warnings if "mtu" in w.lower()]
    assert mtu_lines == [
        "s.yaml: network.mtu: 8500: no Alibaba page gpuctl read says whether gn8is carries jumbo frames, so gpuctl "
        "enables none and configures and exports MTU 1400 on ecs.gn8is.2xlarge; DescribeInstanceTypes' "
        "JumboFrameSupport answers it for your account; set network.mtu: 1400 to say so in the spec"
    ]
    _, warnings = check(cloud_spec(tmp_path, instance_type="ecs.gn8v-8x.48xlarge", mtu=8500))  # jumbo frames: 8500
    assert not [w for w in warnings if "mtu" in w.lower()]


def test_alibaba_refuses_the_key_types_importkeypair_does_not_take(tmp_path: Path) -> None:
    """ImportKeyPair takes RSA, DSA and ECDSA keys, not ed25519: refused at validate, not by the API."""
    ed25519 = tmp_path / "id_ed25519.pub"
    ed25519.write_text((REPO / "examples/ssh/example_ed25519.pub").read_text())
    text = (REPO / "examples/alicloud-erdma-2x8.yaml").read_text().replace("ssh/example_ecdsa.pub", str(ed25519))
    result = check_spec(load_spec_text(text), source="s.yaml")
    assert result.problems == [
        f"s.yaml: ssh.public_key: {ed25519} is a ssh-ed25519 key, which Alibaba's ImportKeyPair does not accept "
        "(it takes RSA, DSA and ECDSA keys); make one with `ssh-keygen -t ecdsa`"]
    ecdsa = check_spec(load_spec_text(text.replace(str(ed25519), str(REPO / "examples/ssh/example_ecdsa.pub"))))
    assert [p for p in ecdsa.problems if "ssh.public_key" in p] == []


@pytest.mark.parametrize(("cidr", "warned"), [
    ("8.0.0.0/8", "8.0.0.0/8 opens SSH to 16,777,216 public addresses"),
    ("100.0.0.0/9", "100.0.0.0/9 opens SSH to 8,388,608 public addresses"),
    ("198.0.0.0/15", "198.0.0.0/15 opens SSH to 131,072 public addresses"),
    ("198.18.0.0/16", None),  # a /16 is the widest that does not warn
    ("10.0.0.0/8", None),  # private: the operator's own network
    ("172.16.0.0/12", None),
])
def test_a_wide_public_admin_range_warns(tmp_path: Path, cidr: str, warned: str | None) -> None:
    problems, warnings = check(cloud_spec(tmp_path).replace("admin_cidr: 203.0.113.0/24", f"admin_cidr: {cidr}"))
    assert problems == []
    wide = [w for w in warnings if "public addresses" in w]
    assert wide == ([] if warned is None else [
        f"s.yaml: network.admin_cidr: {warned}, a range wider than /16 of someone else's network; an office or VPN "
        "range is a /24 to a /32"])
