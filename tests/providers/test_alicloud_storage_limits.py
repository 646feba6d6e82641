"""Alibaba's own limits on the volumes (issue 21, item 4), checked before anything is bought.

- NAS permission groups: the name 3-64 letters, digits, '_', '-' and the description 2-128 letters,
  digits, ':', '_', '-', both starting with a letter (CreateAccessGroup,
  https://www.alibabacloud.com/help/en/nas/api-createaccessgroup, read 2026-12-01); the name holds the
  cluster id, so two clusters of one name never collide; 20 groups per region per account.
- OSS buckets: at most 10 tags (pulumi-alicloud 4.0.0 oss.Bucket `tags`), the spec's plus gpuctl's 5.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.catalog.checks import check_spec
from toolkit.errors import UsageError
from toolkit.providers.alicloud.storage import StorageArgs
from toolkit.spec.loader import load_spec_text

pytestmark = pytest.mark.unit

KEY = (Path(__file__).resolve().parent / "specs" / "test_ecdsa.pub").read_text()
# CreateAccessGroup's rules, written out here from the API reference (not read from storage.py).
NAME_RULE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{2,63}")
DESCRIPTION_RULE = re.compile(r"[A-Za-z][A-Za-z0-9:_-]{1,127}")


def _spec(tmp_path: Path, *, name: str = "t-store", tags: int = 0, storage: str | None = None) -> str:
    key = tmp_path / "id.pub"
    key.write_text(KEY)
    tag_lines = "".join(f"  t{n}: v{n}\n" for n in range(tags))
    volumes = storage or "  - {name: data, kind: nas, mount_path: /mnt/data}\n" \
                         "  - {name: ckpt, kind: object, mount_path: /mnt/ckpt}\n"
    return f"""\
name: {name}
provider: alicloud
region: cn-wulanchabu
zone: cn-wulanchabu-c
node_pools:
  - {{name: gpu, instance_type: ecs.gn7i-c8g1.2xlarge, count: 1}}
network: {{fabric: tcp, mtu: 1500, admin_cidr: 10.0.0.0/8}}
ssh: {{public_key: {key}}}
lifecycle: {{ttl: 8h}}
{"tags:" + chr(10) + tag_lines if tags else ""}storage:
{volumes}"""


def test_the_permission_group_carries_the_cluster_id_and_only_characters_the_api_takes(tmp_path: Path) -> None:
    longest = "a" + "b" * 30 + "c"  # the longest cluster name the spec takes (32)
    volume = "d" + "e" * 14 + "f"  # and the longest volume name (16)
    spec = load_spec_text(_spec(tmp_path, name=longest,
                                storage=f"  - {{name: {volume}, kind: nas, mount_path: /mnt/x}}\n"))
    name, description = StorageArgs.from_spec(spec, cluster_id="5e1f0c2a9b3d").access_group(spec.storage[0])
    assert (name, description) == (f"{longest}-5e1f0c2a9b3d-{volume}", f"gpuctl:{longest}:5e1f0c2a9b3d:{volume}")
    assert NAME_RULE.fullmatch(name)
    assert len(name) == 62
    assert DESCRIPTION_RULE.fullmatch(description)


def test_two_clusters_of_one_name_get_two_permission_groups(tmp_path: Path) -> None:
    spec = load_spec_text(_spec(tmp_path))
    ours = StorageArgs.from_spec(spec, cluster_id="5e1f0c2a9b3d").access_group(spec.storage[0])
    theirs = StorageArgs.from_spec(spec, cluster_id="0123456789ab").access_group(spec.storage[0])
    assert ours[0] == "t-store-5e1f0c2a9b3d-data"
    assert theirs[0] == "t-store-0123456789ab-data"


def test_a_group_name_the_api_would_refuse_is_refused_before_up(tmp_path: Path) -> None:
    spec = load_spec_text(_spec(tmp_path, name="a" + "b" * 31))
    long_id = "f" * 40  # a hand-set gpuctl:clusterId: the name would pass 64 characters
    with pytest.raises(UsageError, match="is not one CreateAccessGroup takes"):
        StorageArgs.from_spec(spec, cluster_id=long_id).access_group(spec.storage[0])
    with pytest.raises(UsageError, match="need the cluster id"):
        StorageArgs.from_spec(spec).access_group(spec.storage[0])


def test_a_bucket_would_carry_more_than_ten_tags_is_refused_naming_tags(tmp_path: Path) -> None:
    assert check_spec(load_spec_text(_spec(tmp_path, tags=5)), source="s.yaml").problems == []
    problems = check_spec(load_spec_text(_spec(tmp_path, tags=6)), source="s.yaml").problems
    assert problems == [
        "s.yaml: tags: 6 tag(s) and the 5 gpuctl adds make 11 on the OSS bucket of storage[1] (ckpt); a bucket "
        "takes at most 10 (pulumi-alicloud 4.0.0 oss.Bucket `tags`: no more than 10 for a bucket): keep at most 5 "
        "tags in the spec's `tags`"
    ]
    existing = "  - {name: ckpt, kind: object, mount_path: /mnt/ckpt, existing: team-ckpt}\n"
    assert check_spec(load_spec_text(_spec(tmp_path, tags=6, storage=existing)), source="s.yaml").problems == []


def test_the_permission_group_quota_is_stated_with_its_source(tmp_path: Path) -> None:
    warnings = check_spec(load_spec_text(_spec(tmp_path)), source="s.yaml").warnings
    assert "s.yaml: storage: 1 nas volume(s) (data) take 1 NAS permission group(s) in cn-wulanchabu; an account " \
        "holds at most 20 per region (https://www.alibabacloud.com/help/en/nas/api-createaccessgroup) and gpuctl " \
        "does not count the ones it already has: `aliyun nas DescribeAccessGroups --RegionId cn-wulanchabu " \
        "--FileSystemType standard` lists them" in warnings
