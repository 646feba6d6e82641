"""Names the cloud accepts, and one MTU per plan (issue 21, item 8 and "Names the cloud accepts").

- Jumbo frames per family, as Alibaba states them: gn8v "support[s] jumbo frames" (its family text);
  RunInstances enables them only on "specific eighth-generation and later instance types", so the
  7th-generation ebmgn7ex of the flagship examples carries 1500 and eRDMA runs at 1400 there. An MTU
  asked for above what the family carries is refused; the default is said once, with what is used.
- Every instance type, image, disk category and zone of the catalog and the examples has a form the
  ECS API accepts; a name that cannot exist is refused with the nearest real one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from toolkit.catalog import load_catalog
from toolkit.catalog.checks import check_spec
from toolkit.cli import main
from toolkit.spec.loader import load_spec, load_spec_text

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
KEY = (Path(__file__).resolve().parent / "specs" / "test_ecdsa.pub").read_text()
EXAMPLES = sorted(p for p in (REPO / "examples").glob("alicloud-*.yaml"))
# Written out from the sources, not read from the code: ecs.<family>.<size> (Alibaba's naming page),
# RunInstances' SystemDisk.Category values, a zone is the region and a letter.
TYPE_NAME = re.compile(r"ecs\.[a-z][a-z0-9]*(-[a-z0-9]+)*\.([1-9][0-9]*)?xlarge")
SYSTEM_DISKS = {"cloud_efficiency", "cloud_ssd", "cloud_essd", "cloud", "cloud_auto", "cloud_essd_entry"}


def _spec(tmp_path: Path, instance_type: str = "ecs.ebmgn7ex.32xlarge", network: str = "fabric: erdma, mtu: 8500",
          disk: str = "") -> str:
    key = tmp_path / "id.pub"
    key.write_text(KEY)
    return f"""\
name: t
provider: alicloud
region: cn-wulanchabu
zone: cn-wulanchabu-c
node_pools:
  - name: gpu
    instance_type: {instance_type}
    count: 2
{disk}network: {{{network}, admin_cidr: 10.0.0.0/8}}
ssh: {{public_key: {key}}}
lifecycle: {{ttl: 8h}}
"""


def _mtu_messages(messages: list[str]) -> list[str]:
    return [m for m in messages if "mtu" in m.lower()]


def test_8500_asked_on_a_family_without_jumbo_frames_is_refused_with_the_mtu_that_works(tmp_path: Path) -> None:
    result = check_spec(load_spec_text(_spec(tmp_path)), source="s.yaml")
    assert result.problems == [
        "s.yaml: network.mtu: 8500 is larger than ecs.ebmgn7ex.32xlarge carries (1500: no jumbo frames on ebmgn7ex; "
        "https://www.alibabacloud.com/help/doc-detail/200512.htm); set network.mtu: 1400"
    ]
    assert _mtu_messages(result.warnings) == []  # the refusal is the one message


def test_the_default_mtu_on_such_a_family_is_said_once_with_what_is_configured(tmp_path: Path) -> None:
    result = check_spec(load_spec_text(_spec(tmp_path, network="fabric: erdma")), source="s.yaml")
    assert result.problems == []
    assert _mtu_messages(result.warnings) == [
        "s.yaml: network.mtu: not set, and its default 8500 is larger than ecs.ebmgn7ex.32xlarge carries (1500: no "
        "jumbo frames on ebmgn7ex; https://www.alibabacloud.com/help/doc-detail/200512.htm); gpuctl configures and "
        "exports 1400; set network.mtu: 1400 to say so in the spec"
    ]


def test_gn8v_carries_8500_and_gets_jumbo_frames_enabled(tmp_path: Path) -> None:
    result = check_spec(load_spec_text(_spec(tmp_path, "ecs.gn8v-8x.48xlarge")), source="s.yaml")
    assert (result.problems, _mtu_messages(result.warnings)) == ([], [])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_flagship_plan_says_one_mtu(example: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    assert main(["plan", "--json", str(example.relative_to(REPO))]) == 0
    plan = yaml.safe_load(capsys.readouterr().out)
    mtu_warnings = _mtu_messages(plan["warnings"])
    # The plan's MTU is the spec's, and at most one warning speaks of it, naming that same MTU.
    assert plan["mtu"] == yaml.safe_load(example.read_text())["network"]["mtu"]
    assert len(mtu_warnings) <= 1, mtu_warnings
    assert all(f"network.mtu: {plan['mtu']}" in w for w in mtu_warnings), mtu_warnings


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_that_can_carry_8500_does_and_none_asks_more_than_its_family_carries(example: Path) -> None:
    spec = load_spec(example)
    catalog = load_catalog("alicloud")
    rows = [catalog.find(pool.instance_type) for pool in spec.node_pools]
    assert all(row is not None for row in rows), example
    carried = [row.max_mtu for row in rows if row is not None]
    if all(mtu == 8500 for mtu in carried):
        assert spec.network.mtu == 8500
    else:
        assert spec.network.mtu <= 1500
        if spec.network.fabric == "erdma":
            assert spec.network.mtu == 1400  # eRDMA without jumbo frames


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_name_in_the_examples_is_one_the_api_accepts(example: Path) -> None:
    spec = load_spec(example)
    assert spec.region is not None
    assert spec.zone is not None
    assert re.fullmatch(re.escape(spec.region) + "-[a-z]", spec.zone)
    for pool in spec.node_pools:
        row = load_catalog("alicloud").find(pool.instance_type)
        assert row is not None
        assert TYPE_NAME.fullmatch(pool.instance_type)
        assert pool.image in {"ubuntu_22_04", "ubuntu_24_04", "alinux_3"} or re.fullmatch(r"m-[0-9a-z]+", pool.image)
        assert pool.system_disk.category in (row.system_disk_categories or SYSTEM_DISKS)


def test_every_catalog_row_has_a_name_of_alibabas_form_and_disks_of_runinstances() -> None:
    for row in load_catalog("alicloud").instance_types:
        assert TYPE_NAME.fullmatch(row.name), row.name
        assert row.name.split(".")[1].split("-")[0] == row.family, row.name
        assert set(row.system_disk_categories or ()) <= SYSTEM_DISKS, row.name


def test_a_name_that_cannot_exist_is_refused_with_the_nearest_real_one(tmp_path: Path) -> None:
    problems = check_spec(load_spec_text(_spec(tmp_path, "ebmgn7ex.32xlarge", "fabric: erdma, mtu: 1400")),
                          source="s.yaml").problems
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'ebmgn7ex.32xlarge' cannot be an instance type of Alibaba Cloud: "
        "their names are ecs.<family>.<size>, e.g. ecs.ebmgn7ex.32xlarge or ecs.gn7i-c8g1.2xlarge; did you mean "
        "ecs.ebmgn7ex.32xlarge?"
    ]


def test_a_system_disk_the_family_does_not_take_is_refused(tmp_path: Path) -> None:
    tcp = "fabric: tcp, mtu: 1500"
    gn7i = _spec(tmp_path, "ecs.gn7i-c8g1.2xlarge", tcp, disk="    system_disk: {category: cloud_efficiency}\n")
    assert check_spec(load_spec_text(gn7i), source="s.yaml").problems == [
        "s.yaml: node_pools[0] (gpu).system_disk.category: gn7i takes cloud_essd, cloud_auto as system disks (its "
        "family page, https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-"
        "vgpu-accelerated-instance-families-1), not cloud_efficiency; use cloud_essd"
    ]
    # ebmgn7ix: its disks were not read, but RunInstances keeps cloud_essd_entry to ecs.u1 and ecs.e.
    entry = _spec(tmp_path, "ecs.ebmgn7ix.32xlarge", "fabric: erdma, mtu: 1400",
                  disk="    system_disk: {category: cloud_essd_entry}\n")
    assert check_spec(load_spec_text(entry), source="s.yaml").problems == [
        "s.yaml: node_pools[0] (gpu).system_disk.category: cloud_essd_entry is for the ecs.u1 and ecs.e families only "
        "(RunInstances), not ebmgn7ix; use cloud_essd"
    ]
