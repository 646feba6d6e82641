"""The spec loader: valid specs load; every mistake names file, line and key path."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from toolkit.errors import SpecError
from toolkit.spec import load_spec, load_spec_text
from toolkit.spec.loader import load_spec_bytes

VALID = """\
name: demo
provider: alicloud
region: cn-beijing
zone: cn-beijing-l
node_pools:
  - name: gpu
    instance_type: ecs.gn7i-c8g1.2xlarge
    count: 2
network:
  fabric: tcp
  admin_cidr: 203.0.113.0/24
ssh:
  public_key: key.pub
lifecycle:
  ttl: 1h30m
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, source="c.yaml")
    return caught.value.problems


def test_valid_spec_has_pinned_defaults() -> None:
    spec = load_spec_text(VALID)
    assert spec.network.mtu == 8500
    assert spec.network.effective_subnet_cidr == "10.42.0.0/24"
    assert spec.lifecycle.ttl_delta == timedelta(hours=1, minutes=30)
    assert spec.node_pools[0].billing.mode == "pay_as_you_go"
    assert spec.software.nccl == "2.26.2"
    assert spec.node_count == 2


def test_paths_are_relative_to_the_spec_file(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(VALID)
    spec = load_spec(tmp_path / "c.yaml")
    assert spec.ssh.public_key == tmp_path / "key.pub"


def test_unknown_key_names_line_and_path() -> None:
    text = VALID.replace("    count: 2\n", "    count: 2\n    cuont: 3\n")
    assert problems_of(text) == [
        "c.yaml:9: node_pools[0].cuont: unknown key; remove it or check its spelling (see examples/)"
    ]


def test_negative_count_and_bad_cidr_are_both_reported() -> None:
    text = VALID.replace("count: 2", "count: -1").replace("203.0.113.0/24", "203.0.113.0/33")
    found = problems_of(text)
    assert found[0] == "c.yaml:8: node_pools[0].count: input should be greater than or equal to 1 (got -1)"
    assert found[1].startswith("c.yaml:11: network.admin_cidr: '203.0.113.0/33' is not a network in CIDR form")
    assert len(found) == 2


def test_world_open_ssh_is_refused_unless_explicit() -> None:
    found = problems_of(VALID.replace("203.0.113.0/24", "0.0.0.0/0"))
    assert len(found) == 1
    assert found[0].startswith("c.yaml:11: network.admin_cidr: admin_cidr 0.0.0.0/0 opens SSH to the whole internet")
    allowed = load_spec_text(VALID.replace("203.0.113.0/24", "0.0.0.0/0\n  allow_world_ssh: true"))
    assert allowed.network.allow_world_ssh is True


def test_duplicate_keys_are_refused() -> None:
    text = VALID.replace("name: demo\n", "name: demo\nname: other\n")
    assert problems_of(text) == ["c.yaml:2: name: duplicate key (first at line 1); remove one"]


def test_yaml_syntax_error_names_the_line() -> None:
    found = problems_of(VALID.replace("    count: 2", "    count: [2"))
    assert len(found) == 1
    assert found[0].startswith("c.yaml:9: YAML syntax error:")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "c.yaml: the file is empty; a spec needs at least name, provider, node_pools, network and lifecycle"),
        (
            "# only a comment\n",
            "c.yaml: the file is empty; a spec needs at least name, provider, node_pools, network and lifecycle",
        ),
        ("- a\n- b\n", "c.yaml:1: the top level must be a mapping of keys (name:, provider:, ...), not a list"),
    ],
)
def test_empty_or_wrong_shaped_files(text: str, expected: str) -> None:
    assert problems_of(text) == [expected]


def test_binary_junk_is_refused_plainly() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe", source="c.yaml")
    assert caught.value.problems == ["c.yaml: not UTF-8 text (byte 0); is this the right file?"]


def test_ttl_rules() -> None:
    assert problems_of(VALID.replace("ttl: 1h30m", "ttl: 10m")) == [
        "c.yaml:15: lifecycle.ttl: ttl 10m is under 30m; Alibaba refuses a release time sooner than 30 minutes "
        "ahead and no cluster comes up and configures faster"
    ]
    assert problems_of(VALID.replace("ttl: 1h30m", "ttl: soon")) == [
        "c.yaml:15: lifecycle.ttl: 'soon' is not a duration; write a number and a unit such as 45m, 8h, 2d or 1h30m"
    ]


def test_cloud_provider_needs_zone_and_key() -> None:
    text = VALID.replace("zone: cn-beijing-l\n", "").replace("ssh:\n  public_key: key.pub\n", "")
    assert problems_of(text) == ["c.yaml:2: provider: provider alicloud needs zone"]


def test_spot_price_only_with_spot() -> None:
    text = VALID.replace(
        "    count: 2\n", "    count: 2\n    billing: {mode: pay_as_you_go, spot_max_price_per_hour: 3}\n"
    )
    assert problems_of(text) == [
        "c.yaml:9: node_pools[0].billing.spot_max_price_per_hour: spot_max_price_per_hour is only for mode: spot"
    ]


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "nope.yaml")
    assert caught.value.problems == [f"{tmp_path / 'nope.yaml'}: no such file"]
