"""Names Tencent accepts (issue 21, "Names the cloud accepts", item 9): every instance type, disk type
and zone in the catalog and the examples is one the API takes, and validate refuses one that cannot
exist with the nearest real one.

Ground truth: tencentcloud_instance validates instance_type with ValidateInstanceType, a name without
"." is refused ("it should be like S1.SMALL1", terraform-provider-tencentcloud v1.82.42
tencentcloud/common/validators.go:36-40); system disk types are SystemDisk.DiskType's values
(tencentcloud-sdk-python-cvm 3.1.178 models.py:23041) of which GPU families take cloud disks
("存储：可选择云硬盘类型"); ImportKeyPair takes "OpenSSH RSA" keys only (models.py:11485,
InvalidPublicKey.Malformed errorcodes.py:716-717); zones as Tencent's zone page lists them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from toolkit.catalog.checks import check_spec
from toolkit.catalog.store import load_catalog
from toolkit.spec import load_spec_text
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
RSA = REPO / "tests" / "providers" / "specs" / "test_rsa.pub"
EXAMPLES = sorted(p for p in (REPO / "examples").glob("tencentcloud-*.yaml"))
# FAMILY.SIZE as every name on Tencent's spec tables reads: GN7.2XLARGE32, GT4.41XLARGE948, S5.SMALL1.
TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*\.[0-9]*(SMALL|MEDIUM|LARGE|XLARGE)[0-9]+")


def spec_text(instance_type: str = "GT4.41XLARGE948", *, zone: str = "ap-shanghai-4", key: Path = RSA,
              billing: str = "{mode: pay_as_you_go}", disk: str = "", lifecycle: str = "", fabric: str = "tcp") -> str:
    return f"""\
name: t
provider: tencentcloud
region: ap-shanghai
zone: {zone}
node_pools:
  - name: gpu
    instance_type: {instance_type}
    count: 2
    billing: {billing}
{disk}network:
  fabric: {fabric}
  mtu: 1500
  admin_cidr: 203.0.113.0/24
ssh:
  public_key: {key}
lifecycle:
  ttl: 8h
{lifecycle}"""


def check(text: str) -> tuple[list[str], list[str]]:
    result = check_spec(load_spec_text(text), source="s.yaml")
    return result.problems, result.warnings


def test_every_catalog_row_is_a_family_size_name_the_provider_takes() -> None:
    for row in load_catalog("tencentcloud").instance_types:
        assert "." in row.name, row.name  # validators.go:38
        assert TYPE_NAME.fullmatch(row.name), row.name
        assert row.name.split(".")[0] == row.family, row.name


def test_every_catalog_disk_type_and_zone_is_one_the_api_names() -> None:
    catalog = load_catalog("tencentcloud")
    api_disks = {"LOCAL_BASIC", "LOCAL_SSD", "CLOUD_BASIC", "CLOUD_SSD", "CLOUD_PREMIUM", "CLOUD_BSSD", "CLOUD_HSSD",
                 "CLOUD_TSSD"}  # models.py:23041
    assert catalog.zones is not None
    zones = {z for listed in catalog.zones.regions.values() for z in listed}
    for row in catalog.instance_types:
        if row.system_disks is None:  # only where the row's source states none, and the row says so
            assert "system disk types" in (row.notes or ""), row.name
            continue
        assert set(row.system_disks) <= api_disks, row.name
        assert not {"LOCAL_BASIC", "LOCAL_SSD"} & set(row.system_disks), row.name  # GPU families: cloud disks
        assert set(row.zones or ()) <= zones, row.name


def test_the_hcc_families_with_newer_gpus_are_named_with_their_rdma_bandwidth() -> None:
    families = {f.name: f for f in load_catalog("tencentcloud").families}
    # TCCL's page (cloud.tencent.com/document/product/1646/93319): HCCPNV4sne 1.6 Tbps, HCCPNV4sn 800 Gbps.
    assert families["HCCPNV4sne"].rdma is not None
    assert families["HCCPNV4sne"].rdma.gbps == 1600
    assert families["HCCPNV4sn"].rdma is not None
    assert families["HCCPNV4sn"].rdma.gbps == 800
    assert (families["HCCPNV4h"].gpu_model, families["HCCPNV4h"].hcc) == ("NVIDIA A100", True)
    for family in families.values():
        assert str(family.source.url).startswith("https://"), family.name


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_tencent_example_names_what_the_cloud_accepts(example: Path) -> None:
    catalog = load_catalog("tencentcloud")
    data = yaml.safe_load(example.read_text())
    assert catalog.zones is not None
    assert data["zone"] in catalog.zones.regions[data["region"]]
    for pool in data["node_pools"]:
        row = catalog.find(pool["instance_type"])
        assert row is not None, pool["instance_type"]
        assert pool["system_disk"]["category"] in (row.system_disks or ())
        assert row.zones is None or data["zone"] in row.zones
    assert (example.parent / data["ssh"]["public_key"]).read_text().startswith("ssh-rsa ")
    result = check_spec(load_spec(example), source="e.yaml")
    assert result.problems == []
    assert not [w for w in result.warnings if "zone" in w.split(": ")[1]]


def test_a_family_without_its_size_is_refused_with_the_real_name() -> None:
    problems, _ = check(spec_text("HCCG5v", zone="ap-shanghai-5"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'HCCG5v' is not a GPU instance type gpuctl knows for tencentcloud: "
        "HCCG5v is an instance family; the API and the provider take only FAMILY.SIZE (GT4.41XLARGE948) names (the "
        "provider refuses a name without '.'); did you mean HCCG5v.24XLARGE384?"]


def test_a_family_no_size_of_is_known_says_what_it_is_and_how_to_list_its_sizes() -> None:
    problems, _ = check(spec_text("HCCPNV4sn.32XLARGE1024", zone="ap-shanghai-5"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'HCCPNV4sn.32XLARGE1024' is not a GPU instance type gpuctl knows "
        "for tencentcloud: gpuctl's catalog has no size of HCCPNV4sn (HCC, 800 Gbps RDMA, "
        "https://cloud.tencent.com/document/product/1646/93319) yet: the pages read name the family, not its sizes; "
        "`tccli cvm DescribeZoneInstanceConfigInfos --Filters "
        "'[{\"Name\":\"instance-family\",\"Values\":[\"HCCPNV4sn\"]}]'` lists them"]


def test_a_name_in_the_wrong_case_gets_the_real_one() -> None:
    problems, _ = check(spec_text("gt4.41xlarge948"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).instance_type: 'gt4.41xlarge948' is not a GPU instance type gpuctl knows for "
        "tencentcloud; did you mean GT4.41XLARGE948?"]


def test_a_local_system_disk_is_refused_on_a_gpu_family() -> None:
    problems, _ = check(spec_text(disk="    system_disk: {size_gb: 300, category: LOCAL_SSD}\n"))
    assert problems == [
        "s.yaml: node_pools[0] (gpu).system_disk.category: GT4.41XLARGE948 does not take a LOCAL_SSD system disk "
        "(https://intl.cloud.tencent.com/document/product/560/19701); did you mean CLOUD_SSD? use one of "
        "CLOUD_PREMIUM, CLOUD_SSD, CLOUD_BSSD, CLOUD_HSSD, CLOUD_TSSD, CLOUD_BASIC"]


def test_a_key_importkeypair_refuses_is_refused_with_the_command_that_makes_one(tmp_path: Path) -> None:
    ed25519 = tmp_path / "id_ed25519.pub"
    ed25519.write_text((REPO / "examples" / "ssh" / "example_ed25519.pub").read_text())
    problems, _ = check(spec_text(key=ed25519))
    assert problems == [
        f"s.yaml: ssh.public_key: {ed25519} is a ssh-ed25519 key, which Tencent's ImportKeyPair does not accept (it "
        "takes OpenSSH RSA keys only); make one with `ssh-keygen -t rsa -b 4096`"]


def test_the_example_key_warning_names_a_key_type_each_cloud_imports() -> None:
    _, warnings = check(spec_text(key=REPO / "examples" / "ssh" / "example_rsa.pub"))
    assert [w for w in warnings if "example key" in w] == [
        f"s.yaml: ssh.public_key: {REPO / 'examples' / 'ssh' / 'example_rsa.pub'} is the example key shipped in "
        "examples/ssh/ (a placeholder: you do not hold its private key); give your own .pub file "
        "(`ssh-keygen -t rsa -b 4096` makes one)"]
    alibaba = check_spec(load_spec(REPO / "examples" / "alicloud-erdma-2x8.yaml"), source="a.yaml")
    assert next(w for w in alibaba.warnings if "example key" in w).endswith("(`ssh-keygen -t ecdsa` makes one)")


def test_a_zone_off_the_pages_is_a_warning_naming_the_listed_ones() -> None:
    problems, warnings = check(spec_text(zone="ap-shanghai-7"))
    assert problems == []
    assert (
        "s.yaml: zone: ap-shanghai-7 is not among the zones Tencent's zone page lists for ap-shanghai "
        "(ap-shanghai-1, ap-shanghai-2, ap-shanghai-3, ap-shanghai-4, ap-shanghai-5, ap-shanghai-8; "
        "https://github.com/tencentyun/intlcloud-documents/blob/6e28aa5fa326c73c092e28458ab14fe61f5cb6da/yehe_doc/"
        "%E8%AE%A1%E7%AE%97/%E4%BA%91%E6%9C%8D%E5%8A%A1%E5%99%A8/%E4%BA%A7%E5%93%81%E7%AE%80%E4%BB%8B/"
        "%E5%9C%B0%E5%9F%9F%E5%92%8C%E5%8F%AF%E7%94%A8%E5%8C%BA_intl_en.md, read 2026-12-01); `up` asks the API "
        "whether it sells there") in warnings
    _, warnings = check(spec_text(zone="ap-shanghai-5"))
    assert ("s.yaml: node_pools[0] (gpu): the GT4 page lists it in ap-shanghai-4 (a dated list), not in "
            "ap-shanghai-5; `up` asks the API whether the zone sells it now") in warnings


def test_two_pools_of_one_type_say_its_mtu_once() -> None:
    result = check_spec(load_spec(REPO / "examples" / "tencentcloud-hcc-two-pools.yaml"), source="e.yaml")
    assert [w for w in result.warnings if "network.mtu" in w] == [
        "e.yaml: network.mtu: 8500: the catalog does not know whether HCCG5v.24XLARGE384 carries jumbo frames; "
        "configure verifies it with a do-not-fragment ping"]


def test_a_pool_without_a_disk_category_sends_none_not_alibabas_default() -> None:
    """The spec's default category is Alibaba's cloud_essd, which tencentcloud_instance refuses
    (ValidateAllowedStringValue(CVM_DISK_TYPE), resource_tc_instance.go:283); left out, Tencent picks a type
    it has in stock ("默认取值：当前有库存的硬盘类型", models.py:23041)."""
    from datetime import UTC, datetime

    from toolkit.providers.tencentcloud.args import GpuClusterArgs

    spec = load_spec_text(spec_text())
    args = GpuClusterArgs.from_spec(spec, load_catalog("tencentcloud"), now=datetime(2026, 12, 1, tzinfo=UTC),
                                    public_key="ssh-rsa AAAA")
    assert [pool.system_disk_type for pool in args.pools] == [None]
    chosen = load_spec_text(spec_text(disk="    system_disk: {size_gb: 300, category: CLOUD_HSSD}\n"))
    args = GpuClusterArgs.from_spec(chosen, load_catalog("tencentcloud"), now=datetime(2026, 12, 1, tzinfo=UTC),
                                    public_key="ssh-rsa AAAA")
    assert [pool.system_disk_type for pool in args.pools] == ["CLOUD_HSSD"]
