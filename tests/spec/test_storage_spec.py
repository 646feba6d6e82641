"""The spec's `storage:` section: shapes, the mount paths it refuses, the clouds' bucket and file
system rules, each refusal with file, line and field; and the hostile-value corpus planted in every
storage field (refused with its line, or accepted literally, never evaluated)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.spec.test_hostile_values import ENV_CANARY, ENV_CANARY_VALUE, REFUSED_CATEGORIES, hostile_values, quoted
from toolkit.errors import SpecError
from toolkit.spec import load_spec_text
from toolkit.spec.models import (
    BUCKET_NAME,
    MOUNT_PATH,
    TEMPLATE_MARKERS,
    VOLUME_NAME,
    StorageVolume,
    mount_path_problem,
)

pytestmark = pytest.mark.unit

HEAD = """\
name: demo
provider: {provider}
region: {region}
zone: {zone}
node_pools:
  - name: gpu
    instance_type: ecs.gn7i-c8g1.2xlarge
    count: 1
network:
  fabric: tcp
  admin_cidr: 203.0.113.0/24
ssh:
  public_key: id.pub
lifecycle:
  ttl: 8h
storage:
"""
# The first volume starts on line 17.
ZONES = {"alicloud": ("cn-beijing", "cn-beijing-h"), "tencentcloud": ("ap-shanghai", "ap-shanghai-5")}
LOCAL = """\
name: lab
provider: local
node_pools:
  - name: node
    instance_type: lab
    count: 1
network:
  fabric: tcp
  admin_cidr: 127.0.0.0/8
lifecycle:
  ttl: 8h
storage:
"""


def spec(volumes: str, provider: str = "alicloud") -> str:
    if provider == "local":
        return LOCAL + volumes
    region, zone = ZONES[provider]
    return HEAD.format(provider=provider, region=region, zone=zone) + volumes


def problems_of(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, source="s.yaml")
    return caught.value.problems


def one(mount_path: str = "/mnt/data", kind: str = "nas", extra: str = "") -> str:
    return f"  - name: data\n    kind: {kind}\n    mount_path: {mount_path}\n{extra}"


def test_a_storage_section_loads_with_its_defaults() -> None:
    loaded = load_spec_text(spec(one() + one("/mnt/ckpt", "object").replace("data", "ckpt", 1)))
    data, ckpt = loaded.storage
    assert (data.name, data.kind, data.mount_path, data.keep_on_down, data.existing) == (
        "data", "nas", "/mnt/data", True, None
    )
    assert ckpt.bucket_name("demo") == "demo-ckpt"
    assert load_spec_text(spec("").replace("storage:\n", "storage: []\n")).storage == []


def test_no_storage_section_means_no_volumes() -> None:
    assert load_spec_text(spec("").replace("storage:\n", "")).storage == []


SYSTEM = "would hide {d}, which the system or gpuctl needs on every node; mount volumes under a folder of their own such as /mnt/data or /data"  # noqa: E501


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/", "/ is the root of every node's file system; mount volumes under a folder such as /mnt/data"),
        ("/etc", "/etc " + SYSTEM.format(d="/etc")),
        ("/usr/local/data", "/usr/local/data " + SYSTEM.format(d="/usr")),
        ("/var", "/var " + SYSTEM.format(d="/var")),
        ("/var/lib/datasets", "/var/lib/datasets " + SYSTEM.format(d="/var")),
        ("/tmp/x", "/tmp/x " + SYSTEM.format(d="/tmp")),
        ("/root", "/root " + SYSTEM.format(d="/root")),
        ("/opt/gpuctl", "/opt/gpuctl " + SYSTEM.format(d="/opt")),
        ("/proc/self", "/proc/self " + SYSTEM.format(d="/proc")),
        ("/home", "/home would hide the login's home (and its ~/.ssh/authorized_keys); mount under a folder of its "
                  "own such as /mnt/data or /home/<user>/data"),
        ("/home/ubuntu", "/home/ubuntu would hide the login's home"),
        ("mnt/data", "'mnt/data' is not an absolute path; write it from / (e.g. /mnt/data)"),
        ("/mnt/../etc", "'/mnt/../etc' contains '.' or '..'; write the path itself (e.g. /mnt/data)"),
        ("/mnt/./data", "'/mnt/./data' contains '.' or '..'"),
        ("/mnt/data/", "'/mnt/data/' is not a normalised path; write '/mnt/data'"),
        ("//mnt/data", "'//mnt/data' is not a normalised path; write '/mnt/data'"),
        ('"/mnt/my data"', "'/mnt/my data' may hold only letters, digits, '.', '_' and '-' between its '/'"),
        ("/mnt/da$ta", "'/mnt/da$ta' may hold only letters"),
    ],
)
def test_mount_paths_that_shadow_the_system_or_are_not_plain_are_refused(path: str, message: str) -> None:
    found = problems_of(spec(one(path)))
    assert len(found) == 1
    assert found[0].startswith("s.yaml:19: storage[0].mount_path: "), found
    assert message in found[0] or found[0].endswith(message), found


@pytest.mark.parametrize("path", ["/mnt/data", "/data", "/mnt", "/srv/ckpt", "/home/ubuntu/data", "/datasets/v2.1"])
def test_ordinary_mount_paths_are_accepted(path: str) -> None:
    assert load_spec_text(spec(one(path))).storage[0].mount_path == path


def test_the_root_itself_is_refused() -> None:
    assert mount_path_problem("/") is not None
    assert mount_path_problem("/mnt") is None


def test_duplicate_names_and_nested_paths_point_at_the_second_volume() -> None:
    text = spec(one("/mnt/data") + one("/mnt/data/ckpt", "object"))
    assert problems_of(text) == [
        "s.yaml:20: storage[1].name: volume name data is used by storage[0] too",
        "s.yaml:22: storage[1].mount_path: /mnt/data/ckpt overlaps storage[0].mount_path /mnt/data; give each "
        "volume a folder of its own, neither inside the other",
    ]
    same = spec(one("/mnt/data") + one("/mnt/data", "object").replace("name: data", "name: ckpt"))
    assert problems_of(same) == [
        "s.yaml:22: storage[1].mount_path: /mnt/data overlaps storage[0].mount_path /mnt/data; give each volume a "
        "folder of its own, neither inside the other"
    ]
    # A shared prefix is not nesting.
    apart = spec(one("/mnt/data") + one("/mnt/data2").replace("name: data", "name: d2"))
    assert len(load_spec_text(apart).storage) == 2


def test_at_most_eight_volumes() -> None:
    volumes = "".join(one(f"/mnt/v{i}").replace("name: data", f"name: v{i}") for i in range(9))
    found = problems_of(spec(volumes))
    assert len(found) == 1
    assert found[0].startswith("s.yaml:16: storage: list should have at most 8 items after validation, not 9"), found


def test_nas_on_the_local_lab_is_refused_with_the_reason() -> None:
    assert problems_of(spec(one(), "local")) == [
        "s.yaml:14: storage[0].kind: kind nas is not available on provider local: the lab has no kernel NFS; "
        "use kind: object (the lab's S3-compatible store)"
    ]
    lab = load_spec_text(spec(one(kind="object"), "local"))
    assert lab.storage[0].bucket_name(lab.name) == "lab-data"


@pytest.mark.parametrize(
    ("provider", "extra", "expected"),
    [
        ("alicloud", "    storage_type: SD\n",
         "s.yaml:20: storage[0].storage_type: 'SD' is not a alicloud file system class; use one of Performance, "
         "Capacity"),
        ("tencentcloud", "    storage_type: Capacity\n",
         "s.yaml:20: storage[0].storage_type: 'Capacity' is not a tencentcloud file system class; use one of SD, HP"),
        ("tencentcloud", "    existing: 31a8e48b9c\n",
         "s.yaml:20: storage[0].existing: '31a8e48b9c' is not a tencentcloud file system id (such as cfs-3pkq3pgr)"),
        ("alicloud", "    existing: fs_1\n",
         "s.yaml:20: storage[0].existing: 'fs_1' is not a alicloud file system id (such as 31a8e48b9c or "
         "extreme-00b88c2e)"),
        ("alicloud", "    existing: 31a8e48b9c\n    storage_type: Capacity\n",
         "s.yaml:21: storage[0].storage_type: storage_type is only for a volume gpuctl creates; an existing one "
         "keeps its own"),
        ("alicloud", "    bucket: my-bucket\n",
         "s.yaml:20: storage[0].bucket: bucket is only for kind: object; a nas volume is named by the volume's name"),
    ],
)
def test_file_system_fields_follow_the_cloud(provider: str, extra: str, expected: str) -> None:
    assert problems_of(spec(one(extra=extra), provider)) == [expected]


@pytest.mark.parametrize("storage_type", ["Performance", "Capacity"])
def test_alicloud_storage_types(storage_type: str) -> None:
    loaded = load_spec_text(spec(one(extra=f"    storage_type: {storage_type}\n")))
    assert loaded.storage[0].storage_type == storage_type


BUCKET_RULE = ("is not a bucket name the clouds accept: 3-63 lower-case letters, digits and '-', starting and "
               "ending with a letter or digit (e.g. llm-checkpoints)")


@pytest.mark.parametrize(
    "bucket",
    ["My-Bucket", "ab", "a" * 64, "bucket-", "my_bucket", "my.bucket", "'日本'", "'a b'"],
)
def test_bucket_names_the_clouds_refuse_are_refused_at_the_field(bucket: str) -> None:
    found = problems_of(spec(one(kind="object", extra=f"    bucket: {bucket}\n")))
    assert len(found) == 1
    assert found[0].startswith("s.yaml:20: storage[0].bucket: "), found
    assert found[0].endswith(BUCKET_RULE), found


def test_a_bucket_that_reads_as_an_option_is_refused_as_one() -> None:
    assert problems_of(spec(one(kind="object", extra="    bucket: -bucket\n"))) == [
        "s.yaml:20: storage[0].bucket: starts with '-' and would be read as a command-line option; "
        "remove the leading '-'"
    ]


def test_an_existing_bucket_is_held_to_the_same_rule() -> None:
    assert problems_of(spec(one(kind="object", extra="    existing: Team_Corpus\n"))) == [
        "s.yaml:20: storage[0].existing: existing 'Team_Corpus' is not a bucket name: 3-63 lower-case letters, "
        "digits and '-', starting and ending with a letter or digit"
    ]
    assert problems_of(spec(one(kind="object", extra="    existing: team\n    bucket: other\n"))) == [
        "s.yaml:21: storage[0].bucket: bucket is only for a volume gpuctl creates; an existing one keeps its own"
    ]


def test_cos_bucket_names_fit_the_60_character_domain() -> None:
    # ap-shanghai: "<name>-1250000000.cos.ap-shanghai.myqcloud.com" leaves 20 characters for the name.
    twenty = "b" * 20
    assert load_spec_text(spec(one(kind="object", extra=f"    bucket: {twenty}\n"), "tencentcloud")).storage
    assert problems_of(spec(one(kind="object", extra=f"    bucket: {twenty}x\n"), "tencentcloud")) == [
        f"s.yaml:20: storage[0].bucket: COS bucket '{twenty}x' is too long for ap-shanghai: "
        "<name>-<APPID>.cos.ap-shanghai.myqcloud.com may have at most 60 characters, so the name at most 20; "
        "set a shorter bucket:"
    ]
    # The default name (<cluster>-<volume>) is checked too: at the volume's line, naming the field to set.
    long_volume = one(kind="object").replace("name: data", "name: checkpoints-long")
    assert problems_of(spec(long_volume, "tencentcloud")) == [
        "s.yaml:17: storage[0].bucket: COS bucket 'demo-checkpoints-long' is too long for ap-shanghai: "
        "<name>-<APPID>.cos.ap-shanghai.myqcloud.com may have at most 60 characters, so the name at most 20; "
        "set bucket: to a shorter name"
    ]
    assert problems_of(spec(one(kind="object", extra="    existing: corpus\n"), "tencentcloud")) == [
        "s.yaml:20: storage[0].existing: 'corpus' is not a full COS bucket name; write <name>-<APPID>, "
        "e.g. ckpt-1250000000"
    ]
    ok = load_spec_text(spec(one(kind="object", extra="    existing: corpus-1250000000\n"), "tencentcloud"))
    assert ok.storage[0].existing == "corpus-1250000000"


def test_unknown_keys_and_kinds_are_refused() -> None:
    assert problems_of(spec(one(extra="    keep_on_dwon: false\n"))) == [
        "s.yaml:20: storage[0].keep_on_dwon: unknown key; did you mean keep_on_down?"
    ]
    assert problems_of(spec(one(kind="efs"))) == ["s.yaml:18: storage[0].kind: input should be 'nas' or 'object'"]
    assert problems_of(spec(one(extra="    keep_on_down: no\n"))) == [
        "s.yaml:20: storage[0].keep_on_down: must be true or false, written without quotes (got 'no')"
    ]


# --- The hostile corpus in every storage field ------------------------------------------------------

# field -> (the volume with @v@ where the value goes, the line of @v@, how to read the value back)
HOSTILE_FIELDS: dict[str, tuple[str, int, Callable[[StorageVolume], str | None]]] = {
    "name": ("  - name: @v@\n    kind: nas\n    mount_path: /mnt/data\n", 17, lambda v: v.name),
    "mount_path": ("  - name: data\n    kind: nas\n    mount_path: @v@\n", 19, lambda v: v.mount_path),
    "existing (nas)": ("  - name: data\n    kind: nas\n    mount_path: /mnt/d\n    existing: @v@\n", 20,
                       lambda v: v.existing),
    "existing (object)": ("  - name: data\n    kind: object\n    mount_path: /mnt/d\n    existing: @v@\n", 20,
                          lambda v: v.existing),
    "bucket": ("  - name: data\n    kind: object\n    mount_path: /mnt/d\n    bucket: @v@\n", 20, lambda v: v.bucket),
    "storage_type": ("  - name: data\n    kind: nas\n    mount_path: /mnt/d\n    storage_type: @v@\n", 20,
                     lambda v: v.storage_type),
}


def check_planted(field: str, value: str) -> bool:
    """Plant `value` in `field`; refused with a printable problem on its line, or accepted literally."""
    template, line, got = HOSTILE_FIELDS[field]
    text = spec(template.replace("@v@", quoted(value)))
    refusal: SpecError | None = None
    try:
        loaded = load_spec_text(text, source="h.yaml")
    except SpecError as error:
        refusal = error
    if refusal is not None:
        for problem in refusal.problems:
            assert re.match(r"^h\.yaml:\d+: ", problem), (field, value, problem)
            assert problem.isprintable(), (field, value, problem)
            assert ENV_CANARY_VALUE not in problem
        assert any(p.startswith(f"h.yaml:{line}: ") for p in refusal.problems), (field, value, refusal.problems)
        return False
    assert got(loaded.storage[0]) == value, (field, value)
    assert not any(marker in value for marker in TEMPLATE_MARKERS)
    assert not any(unicodedata.category(char) in REFUSED_CATEGORIES for char in value)
    assert not value.startswith("-")
    return True


def test_every_hostile_value_in_every_storage_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_CANARY, ENV_CANARY_VALUE)
    canary = tmp_path / "CANARY"
    values = hostile_values(canary)
    accepted: dict[str, list[str]] = {}
    for field in HOSTILE_FIELDS:
        for value in values:
            if check_planted(field, value):
                accepted.setdefault(field, []).append(value)
    assert not canary.exists()
    # The shaped fields accept only their shapes; a mount path only what no system directory holds.
    assert all(VOLUME_NAME.fullmatch(v) for v in accepted.get("name", []))
    assert all(MOUNT_PATH.fullmatch(v) and mount_path_problem(v) is None for v in accepted.get("mount_path", []))
    for field in ("existing (object)", "bucket"):
        assert all(BUCKET_NAME.fullmatch(v) for v in accepted.get(field, [])), field
    assert set(accepted.get("storage_type", [])) <= {"Performance", "Capacity"}
    assert all(re.fullmatch(r"[0-9a-z][0-9a-z-]{2,62}[0-9a-z]", v) for v in accepted.get("existing (nas)", []))
    print(f"\nstorage hostile corpus: {len(values)} values x {len(HOSTILE_FIELDS)} fields; accepted: "
          + ", ".join(f"{field} {len(found)}" for field, found in accepted.items()))
