"""The spec's rules for hostile and nonsensical values: each is refused with file, line, key path,
what is wrong and how to fix it; never a traceback, never a silent coercion."""

from __future__ import annotations

import pytest

from toolkit.errors import SpecError
from toolkit.spec import load_spec_text

# Every free-form field present, each on its own line (line numbers are in the comments).
FULL = """\
name: full
provider: alicloud
region: cn-beijing
zone: cn-beijing-h
owner: infra-team@example.com
node_pools:
  - name: gpu
    instance_type: ecs.ebmgn7ex.32xlarge
    count: 2
    image: ubuntu_22_04
    system_disk:
      size_gb: 500
      category: cloud_essd
network:
  fabric: erdma
  admin_cidr: 203.0.113.0/24
ssh:
  public_key: id.pub
  user: ubuntu
software:
  driver: 570.133.20
  cuda: "12.8"
  nccl: 2.26.2
  nccl_tests: 2.14.1
nccl_overrides:
  NCCL_DEBUG: WARN
lifecycle:
  ttl: 8h
tags:
  project: llm
"""
LINES = {
    "owner": 5, "instance_type": 8, "count": 9, "image": 10, "size_gb": 12, "category": 13, "public_key": 18,
    "user": 19, "driver": 21, "cuda": 22, "nccl": 23, "nccl_tests": 24, "NCCL_DEBUG": 26, "ttl": 28,
    "project": 30,
}


def plant(key: str, value: str) -> str:
    """FULL with `key:`'s value replaced by `value` (YAML text, written as given)."""
    lines = FULL.splitlines(keepends=True)
    index = LINES[key] - 1
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines[index] = f"{indent}{key}: {value}\n"
    return "".join(lines)


def problems_of(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, source="c.yaml")
    return caught.value.problems


def test_the_full_spec_is_valid() -> None:
    spec = load_spec_text(FULL)
    assert spec.ssh.user == "ubuntu"
    assert spec.nccl_overrides == {"NCCL_DEBUG": "WARN"}


# --- Rule 1: free-form text is data, never code ---------------------------------------------------

TEMPLATE = (
    "contains a template marker '{marker}'; spec values are data and are never evaluated, so write the literal value"
)
CONTROL = "contains a control character U+{code}; write the value on one line without control characters"
OPTION = "starts with '-' and would be read as a command-line option; remove the leading '-'"


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("owner", "\"{{ lookup('pipe', 'id') }}\"", "c.yaml:5: owner: " + TEMPLATE.format(marker="{{")),
        (
            "instance_type",
            "\"{% for x in y %}\"",
            "c.yaml:8: node_pools[0].instance_type: " + TEMPLATE.format(marker="{%"),
        ),
        ("image", "\"ubuntu{# note #}\"", "c.yaml:10: node_pools[0].image: " + TEMPLATE.format(marker="{#")),
        ("category", "\"x }}\"", "c.yaml:13: node_pools[0].system_disk.category: " + TEMPLATE.format(marker="}}")),
        ("public_key", "\"{{ key }}.pub\"", "c.yaml:18: ssh.public_key: " + TEMPLATE.format(marker="{{")),
        ("user", "\"{{u}}\"", "c.yaml:19: ssh.user: " + TEMPLATE.format(marker="{{")),
        ("driver", "\"570 %}\"", "c.yaml:21: software.driver: " + TEMPLATE.format(marker="%}")),
        ("NCCL_DEBUG", "\"{{ 7*7 }}\"", "c.yaml:26: nccl_overrides.NCCL_DEBUG: " + TEMPLATE.format(marker="{{")),
        ("ttl", "\"8h #}\"", "c.yaml:28: lifecycle.ttl: " + TEMPLATE.format(marker="#}")),
        ("project", "\"{{ x }}\"", "c.yaml:30: tags.project: " + TEMPLATE.format(marker="{{")),
    ],
)
def test_template_markers_are_refused_in_every_free_form_field(key: str, value: str, expected: str) -> None:
    assert problems_of(plant(key, value)) == [expected]


def test_a_template_marker_in_a_tag_key_is_refused() -> None:
    text = FULL.replace("  project: llm\n", "  \"{{ k }}\": llm\n")
    assert problems_of(text) == ["c.yaml:30: tags.'{{ k }}': " + TEMPLATE.format(marker="{{")]


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("owner", '"a\\nb"', "c.yaml:5: owner: " + CONTROL.format(code="000A")),
        ("instance_type", '"ecs.x\\r"', "c.yaml:8: node_pools[0].instance_type: " + CONTROL.format(code="000D")),
        ("image", '"ubuntu\\t22"', "c.yaml:10: node_pools[0].image: " + CONTROL.format(code="0009")),
        ("category", '"cloud\\0essd"', "c.yaml:13: node_pools[0].system_disk.category: " + CONTROL.format(code="0000")),
        ("public_key", '"\\e[31mid.pub"', "c.yaml:18: ssh.public_key: " + CONTROL.format(code="001B")),
        ("user", '"ubuntu\\x7f"', "c.yaml:19: ssh.user: " + CONTROL.format(code="007F")),
        ("cuda", '"12.8\\x85"', "c.yaml:22: software.cuda: " + CONTROL.format(code="0085")),
        ("nccl", '"\\x9b2.26.2"', "c.yaml:23: software.nccl: " + CONTROL.format(code="009B")),
        (
            "NCCL_DEBUG",
            '"WARN\\LNCCL_P2P_DISABLE=1"',
            "c.yaml:26: nccl_overrides.NCCL_DEBUG: " + CONTROL.format(code="2028"),
        ),
        ("ttl", '"8h\\P"', "c.yaml:28: lifecycle.ttl: " + CONTROL.format(code="2029")),
        ("project", '"\\u202eevil"', "c.yaml:30: tags.project: " + CONTROL.format(code="202E")),
        ("nccl_tests", '"2.14\\u200b.1"', "c.yaml:24: software.nccl_tests: " + CONTROL.format(code="200B")),
    ],
)
def test_control_characters_are_refused_and_never_echoed(key: str, value: str, expected: str) -> None:
    found = problems_of(plant(key, value))
    assert found == [expected]
    assert all(line.isprintable() for line in found)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("owner", "-oProxyCommand=id", "c.yaml:5: owner: " + OPTION),
        ("instance_type", "--help", "c.yaml:8: node_pools[0].instance_type: " + OPTION),
        ("image", "-x", "c.yaml:10: node_pools[0].image: " + OPTION),
        ("category", "-c", "c.yaml:13: node_pools[0].system_disk.category: " + OPTION),
        ("public_key", "-F/dev/null", "c.yaml:18: ssh.public_key: " + OPTION),
        ("user", "-oProxyCommand=id", "c.yaml:19: ssh.user: " + OPTION),
        ("driver", "'-1'", "c.yaml:21: software.driver: " + OPTION),
        ("NCCL_DEBUG", "--x", "c.yaml:26: nccl_overrides.NCCL_DEBUG: " + OPTION),
        ("ttl", "-8h", "c.yaml:28: lifecycle.ttl: " + OPTION),
        ("project", "-e", "c.yaml:30: tags.project: " + OPTION),
    ],
)
def test_option_looking_values_are_refused(key: str, value: str, expected: str) -> None:
    assert problems_of(plant(key, value)) == [expected]


@pytest.mark.parametrize("value", ['"-1"', '"-0.5"', "-1", "0", "'1'"])
def test_a_plain_negative_number_is_fine_in_nccl_overrides(value: str) -> None:
    spec = load_spec_text(plant("NCCL_DEBUG", value))
    assert spec.nccl_override_values()["NCCL_DEBUG"] == value.strip("\"'")


def test_shell_text_in_a_tag_value_is_data_and_kept_literally() -> None:
    spec = load_spec_text(plant("project", "'$(touch /tmp/x); `id` ${HOME}'"))
    assert spec.tags == {"project": "$(touch /tmp/x); `id` ${HOME}"}


# --- Rule 2: stricter shapes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "Ubuntu",
            "c.yaml:19: ssh.user: 'Ubuntu' is not a POSIX login name: 1-32 lower-case letters, digits, '_' and '-', "
            "starting with a letter or '_' (e.g. ubuntu, root)",
        ),
        (
            "root@host",
            "c.yaml:19: ssh.user: 'root@host' is not a POSIX login name: 1-32 lower-case letters, digits, '_' and '-', "
            "starting with a letter or '_' (e.g. ubuntu, root)",
        ),
        (
            "'a b'",
            "c.yaml:19: ssh.user: 'a b' is not a POSIX login name: 1-32 lower-case letters, digits, '_' and '-', "
            "starting with a letter or '_' (e.g. ubuntu, root)",
        ),
        (
            "9lives",
            "c.yaml:19: ssh.user: '9lives' is not a POSIX login name: 1-32 lower-case letters, digits, '_' and '-', "
            "starting with a letter or '_' (e.g. ubuntu, root)",
        ),
        ("a" * 33, "c.yaml:19: ssh.user: is 33 characters long; at most 32"),
    ],
)
def test_ssh_user_must_be_a_posix_login_name(value: str, expected: str) -> None:
    assert problems_of(plant("user", value)) == [expected]


@pytest.mark.parametrize("value", ["root", "ubuntu", "_svc", "ecs-user", "a" * 32])
def test_posix_login_names_pass(value: str) -> None:
    assert load_spec_text(plant("user", value)).ssh.user == value


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "driver",
            "latest",
            "c.yaml:21: software.driver: 'latest' is not a version: write numbers joined by dots, such as "
            "570.133.20, 12.8 or 2.26.2",
        ),
        (
            "cuda",
            "'12.8; apt install x'",
            "c.yaml:22: software.cuda: '12.8; apt install x' is not a version: write numbers joined by dots, such as "
            "570.133.20, 12.8 or 2.26.2",
        ),
        (
            "nccl",
            "2.26.2-1+cuda12.8",
            "c.yaml:23: software.nccl: '2.26.2-1+cuda12.8' is not a version: write numbers joined by dots, such as "
            "570.133.20, 12.8 or 2.26.2",
        ),
        (
            "nccl_tests",
            "1.2.3.4.5",
            "c.yaml:24: software.nccl_tests: '1.2.3.4.5' is not a version: write numbers joined by dots, such as "
            "570.133.20, 12.8 or 2.26.2",
        ),
        (
            "cuda",
            "12.8",  # YAML reads an unquoted 12.8 as a float
            "c.yaml:22: software.cuda: input should be a valid string (got 12.8)",
        ),
    ],
)
def test_software_versions_must_look_like_versions(key: str, value: str, expected: str) -> None:
    assert problems_of(plant(key, value)) == [expected]


@pytest.mark.parametrize(("key", "value"), [("driver", "570.133.20"), ("cuda", "'12.8'"), ("nccl", "2.26.2-1")])
def test_real_version_forms_pass(key: str, value: str) -> None:
    spec = load_spec_text(plant(key, value))
    assert getattr(spec.software, key) == value.strip("'")


def test_nccl_override_text_is_at_most_1023_bytes() -> None:
    # NCCL copies at most 1023 bytes of a value out of nccl.conf (setEnvFile's strncpy) and drops the rest.
    assert load_spec_text(plant("NCCL_DEBUG", "x" * 1023)).nccl_overrides["NCCL_DEBUG"] == "x" * 1023
    assert problems_of(plant("NCCL_DEBUG", "x" * 1024)) == [
        "c.yaml:26: nccl_overrides.NCCL_DEBUG: is 1024 characters long; at most 1023"
    ]
    # A character of three bytes in UTF-8: 400 of them are 1,200 bytes.
    assert problems_of(plant("NCCL_DEBUG", "\u4e2d" * 400)) == [
        "c.yaml:26: nccl_overrides.NCCL_DEBUG: is 1200 bytes long in UTF-8; NCCL reads at most 1023 bytes of a value"
    ]


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "'Yes'"])
def test_yaml_1_1_boolean_words_are_refused_in_nccl_overrides(word: str) -> None:
    shown = word.strip("'")
    assert problems_of(plant("NCCL_DEBUG", word)) == [
        f"c.yaml:26: nccl_overrides.NCCL_DEBUG: '{shown}' is ambiguous; NCCL reads numbers, so write 1 or 0 "
        "(or true/false)"
    ]


def test_a_float_nccl_override_is_refused_with_one_problem() -> None:
    assert problems_of(plant("NCCL_DEBUG", "0.5")) == [
        "c.yaml:26: nccl_overrides.NCCL_DEBUG: must be text, a whole number or true/false, not float 0.5; "
        "quote it if it is text"
    ]


# --- Rule 3: strict numbers and booleans --------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "count",
            "true",
            "c.yaml:9: node_pools[0].count: must be a whole number written without quotes, such as 2 (got True)",
        ),
        (
            "count",
            "'2'",
            "c.yaml:9: node_pools[0].count: must be a whole number written without quotes, such as 2 (got '2')",
        ),
        (
            "count",
            "2.0",
            "c.yaml:9: node_pools[0].count: must be a whole number written without quotes, such as 2 (got 2.0)",
        ),
        (
            "size_gb",
            "'500'",
            "c.yaml:12: node_pools[0].system_disk.size_gb: must be a whole number written without quotes, such as 2 "
            "(got '500')",
        ),
    ],
)
def test_numbers_must_be_numbers(key: str, value: str, expected: str) -> None:
    assert problems_of(plant(key, value)) == [expected]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "  mtu: '8500'",
            "c.yaml:17: network.mtu: must be a whole number written without quotes, such as 2 (got '8500')",
        ),
        (
            "  public_ip: yes",
            "c.yaml:17: network.public_ip: must be true or false, written without quotes (got 'yes')",
        ),
        (
            "  public_ip: 'true'",
            "c.yaml:17: network.public_ip: must be true or false, written without quotes (got 'true')",
        ),
        (
            "  allow_world_ssh: 1",
            "c.yaml:17: network.allow_world_ssh: must be true or false, written without quotes (got 1)",
        ),
        (
            "  allow_world_ssh: on",
            "c.yaml:17: network.allow_world_ssh: must be true or false, written without quotes (got 'on')",
        ),
    ],
)
def test_network_numbers_and_booleans_are_strict(line: str, expected: str) -> None:
    text = FULL.replace("  admin_cidr: 203.0.113.0/24\n", f"  admin_cidr: 203.0.113.0/24\n{line}\n")
    assert problems_of(text) == [expected]


def test_other_strict_numbers() -> None:
    text = FULL.replace("  ttl: 8h\n", "  ttl: 8h\n  idle_stop_minutes: '60'\n")
    assert problems_of(text) == [
        "c.yaml:29: lifecycle.idle_stop_minutes: must be a whole number written without quotes, such as 2 "
        "(got '60')"
    ]
    text = FULL.replace("    system_disk:\n", "    billing: {mode: monthly, months: '3'}\n    system_disk:\n")
    assert problems_of(text) == [
        "c.yaml:11: node_pools[0].billing.months: must be a whole number written without quotes, such as 2 "
        "(got '3')"
    ]
    spot = "    billing: {mode: spot, spot_max_price_per_hour: .inf}\n"
    text = FULL.replace("    system_disk:\n", spot + "    system_disk:\n")
    assert problems_of(text) == [
        "c.yaml:11: node_pools[0].billing.spot_max_price_per_hour: must be a finite number written without quotes, "
        "such as 2.5 (got inf)"
    ]


def test_a_5000_digit_count_is_a_spec_error_naming_the_line() -> None:
    assert problems_of(plant("count", "9" * 5000)) == [
        "c.yaml:9: node_pools[0].count: a number 5000 characters long is far too large for a cluster spec "
        "(at most 32); write the value you mean, e.g. count: 2"
    ]


def test_a_huge_binary_number_is_refused_the_same_way() -> None:
    assert problems_of(plant("count", "0b" + "1" * 20000)) == [
        "c.yaml:9: node_pools[0].count: a number 20002 characters long is far too large for a cluster spec "
        "(at most 32); write the value you mean, e.g. count: 2"
    ]


def test_a_huge_ttl_is_a_clear_error_not_an_overflow() -> None:
    assert problems_of(plant("ttl", "99999999999999h")) == [
        "c.yaml:28: lifecycle.ttl: '99999999999999h' is far too long a duration; write something like 8h or 2d"
    ]
    assert problems_of(plant("ttl", "9999999999w")) == [
        "c.yaml:28: lifecycle.ttl: '9999999999w' is far too long a duration; write something like 8h or 2d"
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-13-45", "c.yaml:28: lifecycle.ttl: cannot read this value (month must be in 1..12)"),
        ("!!float abc", "c.yaml:28: lifecycle.ttl: cannot read this value (could not convert string to float: 'abc')"),
        (
            "!!timestamp x",
            "c.yaml:28: lifecycle.ttl: cannot read this value ('NoneType' object has no attribute 'groupdict')",
        ),
    ],
)
def test_values_yaml_cannot_build_are_spec_errors(value: str, expected: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_text(plant("ttl", value), source="c.yaml")
    assert caught.value.problems == [expected]
    assert caught.value.hint == "quote it if it is meant as text"


# --- Rule 4: admin_cidr wider than /8, or IPv6 ---------------------------------------------------------

FIX = (
    "set it to your office or VPN range (e.g. 203.0.113.0/24), or set allow_world_ssh: true if you really mean it"
)


@pytest.mark.parametrize(
    ("cidr", "expected"),
    [
        ("0.0.0.0/1", "admin_cidr 0.0.0.0/1 opens SSH to 2,147,483,648 addresses, a range wider than /8; " + FIX),
        ("10.0.0.0/7", "admin_cidr 10.0.0.0/7 opens SSH to 33,554,432 addresses, a range wider than /8; " + FIX),
    ],
)
def test_wide_admin_ranges_are_refused(cidr: str, expected: str) -> None:
    text = FULL.replace("admin_cidr: 203.0.113.0/24", f"admin_cidr: {cidr}")
    assert problems_of(text) == [f"c.yaml:16: network.admin_cidr: {expected}"]
    allowed = load_spec_text(text.replace("  fabric: erdma\n", "  fabric: erdma\n  allow_world_ssh: true\n"))
    assert allowed.network.allow_world_ssh is True


IPV6 = ("the nodes gpuctl creates have IPv4 addresses only and their SSH rule is an IPv4 rule (the clouds keep "
        "IPv6 sources in other fields), so give the IPv4 range you connect from (e.g. 203.0.113.0/24)")


@pytest.mark.parametrize(
    ("cidr", "expected"),
    [
        ("'::/1'", "admin_cidr ::/1 is an IPv6 range; " + IPV6),
        ("'2001:db8::/32'", "admin_cidr 2001:db8::/32 is an IPv6 range; " + IPV6),
        ("'2001:db8::7/128'", "admin_cidr 2001:db8::7/128 is an IPv6 range; " + IPV6),
        ("'::ffff:0:0/96'", "admin_cidr ::ffff:0:0/96 is an IPv4-mapped IPv6 range, the IPv4 range 0.0.0.0/0 "
         "written in IPv6; the SSH rule gpuctl creates is an IPv4 rule, so write the IPv4 form, admin_cidr: 0.0.0.0/0"),
        ("'::ffff:203.0.113.0/120'", "admin_cidr ::ffff:cb00:7100/120 is an IPv4-mapped IPv6 range, the IPv4 range "
         "203.0.113.0/24 written in IPv6; the SSH rule gpuctl creates is an IPv4 rule, so write the IPv4 form, "
         "admin_cidr: 203.0.113.0/24"),
    ],
)
def test_ipv6_admin_ranges_never_reach_the_ipv4_rule(cidr: str, expected: str) -> None:
    text = FULL.replace("admin_cidr: 203.0.113.0/24", f"admin_cidr: {cidr}")
    assert problems_of(text) == [f"c.yaml:16: network.admin_cidr: {expected}"]
    # allow_world_ssh does not make an IPv6 range fit an IPv4 field.
    assert problems_of(text.replace("  fabric: erdma\n", "  fabric: erdma\n  allow_world_ssh: true\n")) == [
        f"c.yaml:17: network.admin_cidr: {expected}"]


@pytest.mark.parametrize("cidr", ["10.0.0.0/8", "203.0.113.7/32"])
def test_admin_ranges_up_to_the_limit_pass(cidr: str) -> None:
    text = FULL.replace("admin_cidr: 203.0.113.0/24", f"admin_cidr: {cidr}")
    assert load_spec_text(text).network.admin_cidr == cidr.strip("'")


def test_a_driver_branch_newer_than_the_roles_know_is_refused_with_the_reason() -> None:
    assert problems_of(plant("driver", "580.95.05")) == [
        "c.yaml:21: software.driver: 580.95.05 is of the 580 branch, and the nvidia_driver role knows NVIDIA's "
        "package names up to the 575 branch only: from 580 on NVIDIA's packaging changes (the driver installation "
        "guide's nvidia-open packages and version locks, Fabric Manager's EL package), which the role has not been "
        "read against; pin a 570-series driver (the default is 570.133.20)"]
    assert load_spec_text(plant("driver", "575.57.08")).software.driver == "575.57.08"
    assert load_spec_text(plant("driver", "550.163.01")).software.driver == "550.163.01"
