"""A generated corpus of broken specs: each gets a clear error per problem, a non-zero exit code,
and never a traceback. Six strategies x 100 examples = 600 broken specs per run.

The base spec is valid (asserted below), and every mutation is one that can never be valid, so a
pass means the error path was taken, not that the spec happened to load.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import tempfile
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.cli import main
from toolkit.errors import EXIT_CATALOG, EXIT_SPEC

BASE: dict[str, Any] = {
    "name": "lab",
    "provider": "local",
    "node_pools": [{"name": "node", "instance_type": "lab", "count": 2}],
    "network": {"fabric": "tcp", "mtu": 8500, "vpc_cidr": "10.213.0.0/16", "admin_cidr": "127.0.0.0/8"},
    "lifecycle": {"ttl": "8h"},
    "tags": {"purpose": "lab"},
}

# Values that each field can never accept. Numbers and booleans are strict: `count: true`,
# `count: "2"` and `public_ip: "yes"` are refused, never coerced.
WRONG_VALUES: dict[tuple[str | int, ...], list[Any]] = {
    ("name",): [42, "", "Upper", "-x", "a" * 40, "under_score", None, [1]],
    ("provider",): ["aws", "gcp", 1, None, ["local"]],
    ("node_pools",): [[], "gpu", 3, None, {"name": "x"}],
    ("node_pools", 0, "count"): [0, -1, -100, 10_000, "many", 1.5, None, [2], True, "2", 2.0],
    ("node_pools", 0, "name"): ["", "UPPER", 7, None, "a" * 30],
    ("node_pools", 0, "image"): ["{{ x }}", "-x", "a\nb", "\x1b[31m", "ubuntu_22_04"],
    ("node_pools", 0, "capture"): ["{{ x }}", "-oProxyCommand=x", "a\x00b", "/dev/zero"],
    ("node_pools", 0, "billing"): [
        {"mode": "free"},
        {"mode": "monthly"},
        {"mode": "spot", "spot_max_price_per_hour": -1},
        "spot",
    ],
    ("network", "fabric"): ["infiniband", "", 0, None],
    ("network", "mtu"): [0, 100, 65536, "jumbo", None, "8500", True],
    ("network", "admin_cidr"): ["0.0.0.0/0", "::/0", None, 5, "0.0.0.0/1", "10.0.0.0/7", "::/1", "2000::/3"],
    ("network", "public_ip"): ["yes", "true", 1, "on"],
    ("lifecycle", "ttl"): ["forever", "", "5m", "1000d", 8, None, "99999999999999h", "{{ ttl }}", "8h\n"],
    ("lifecycle",): [None, "8h", []],
    ("tags",): [{"aliyun:x": "1"}, {"k": "v" * 200}, ["a"], "t", {"k": "{{ v }}"}, {"-k": "v"}, {"k": "a\u2028b"}],
    ("owner",): ["{% x %}", "-o", "a\rb", "x" * 65],
}

ROOT_KEYS = {
    "name",
    "provider",
    "region",
    "zone",
    "owner",
    "node_pools",
    "network",
    "ssh",
    "software",
    "nccl_overrides",
    "lifecycle",
    "tags",
}


def run_validate(content: bytes) -> tuple[int, str, str]:
    with tempfile.NamedTemporaryFile("wb", suffix=".yaml", delete=False) as handle:
        handle.write(content)
        path = handle.name
    try:
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["validate", path])
        return code, out.getvalue(), err.getvalue().replace(path, "SPEC")
    finally:
        os.unlink(path)


def assert_clean_refusal(code: int, out: str, err: str) -> None:
    assert code in (EXIT_SPEC, EXIT_CATALOG), (code, err)
    assert out == ""
    assert "Traceback" not in err
    assert "internal error" not in err
    lines = err.rstrip("\n").split("\n")
    assert lines
    assert lines[0]
    for line in lines:
        # One line per problem, each naming the file (and line, when there is one); hints indented.
        assert line.startswith(("SPEC", "  hint: ")), line


def set_path(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    mutated = copy.deepcopy(data)
    target: Any = mutated
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return mutated


def dump(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False).encode()


common = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_base_spec_is_valid() -> None:
    code, out, err = run_validate(dump(BASE))
    assert code == 0, err
    assert "ok (local, 2 nodes" in out


@common
@given(
    st.sampled_from(sorted(WRONG_VALUES, key=str)).flatmap(
        lambda path: st.tuples(st.just(path), st.sampled_from(WRONG_VALUES[path]))
    )
)
def test_wrong_values(case: tuple[tuple[str | int, ...], Any]) -> None:
    path, value = case
    assert_clean_refusal(*run_validate(dump(set_path(BASE, path, value))))


@common
@given(
    st.sampled_from([(), ("network",), ("lifecycle",), ("node_pools", 0)]),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20),
)
def test_unknown_keys(where: tuple[str | int, ...], key: str) -> None:
    data = copy.deepcopy(BASE)
    target: Any = data
    for part in where:
        target = target[part]
    if (
        key in target
        or (where == () and key in ROOT_KEYS)
        or key
        in {
            "billing",
            "system_disk",
            "image",
            "capture",
            "subnet_cidr",
            "public_ip",
            "allow_world_ssh",
            "idle_stop_minutes",
        }
    ):
        key = key + "_unknown"
    target[key] = 1
    assert_clean_refusal(*run_validate(dump(data)))


@common
@given(st.text(min_size=1, max_size=25))
def test_bad_cidrs(text: str) -> None:
    try:
        ipaddress.ip_network(text, strict=True)
        text = text + "/99"
    except ValueError:
        pass
    field = ("network", "vpc_cidr") if len(text) % 2 else ("network", "admin_cidr")
    assert_clean_refusal(*run_validate(dump(set_path(BASE, field, text))))


@common
@given(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30), st.integers(-5, 0))
def test_unknown_instance_types_and_negative_counts(instance_type: str, count: int) -> None:
    cloud = {
        "name": "cloudy",
        "provider": "alicloud",
        "region": "cn-beijing",
        "zone": "cn-beijing-l",
        "node_pools": [{"name": "gpu", "instance_type": "gpuctl-no-such-" + instance_type, "count": 1}],
        "network": {"fabric": "tcp", "admin_cidr": "203.0.113.0/24"},
        "ssh": {"public_key": "/dev/null"},
        "lifecycle": {"ttl": "8h"},
    }
    # Unknown type alone: a catalog refusal (exit 4). With a bad count too: a schema refusal (3).
    assert_clean_refusal(*run_validate(dump(cloud)))
    assert_clean_refusal(*run_validate(dump(set_path(cloud, ("node_pools", 0, "count"), count))))


@common
@given(
    st.sampled_from(
        [
            "[",
            "{",
            "key: [1, 2",
            "a: b: c",
            "\t- x",
            "name: 'open",
            "&a [*a]",
            "? [",
            "- a\nb: c",
            "name: x\n  bad: indent",
            "%YAML 9.9\n---\na: 1",
            "!!python/object:os.system x",
        ]
    ),
    st.text(max_size=40),
)
def test_yaml_syntax_errors_and_random_text(broken: str, noise: str) -> None:
    assert_clean_refusal(*run_validate((dump(BASE).decode() + "\n" + broken + noise).encode()))
    assert_clean_refusal(*run_validate((noise + broken).encode()))


@common
@given(st.binary(max_size=200))
def test_binary_junk_and_empty_files(junk: bytes) -> None:
    assert_clean_refusal(*run_validate(junk))


@pytest.mark.parametrize("content", [b"", b"   \n\n", b"# nothing\n", b"---\n", b"\x00\x01\x02", b"\xff" * 10])
def test_empty_and_degenerate_files(content: bytes) -> None:
    assert_clean_refusal(*run_validate(content))


@pytest.mark.parametrize(
    ("replace", "by", "expected"),
    [
        (
            "count: 2",
            "count: " + "9" * 5000,
            "SPEC:6: node_pools[0].count: a number 5000 characters long is far too large for a cluster spec "
            "(at most 32); write the value you mean, e.g. count: 2",
        ),
        (
            "ttl: 8h",
            "ttl: 99999999999999h",
            "SPEC:13: lifecycle.ttl: '99999999999999h' is far too long a duration; write something like 8h or 2d",
        ),
        (
            "count: 2",
            "count: true",
            "SPEC:6: node_pools[0].count: must be a whole number written without quotes, such as 2 (got True)",
        ),
        (
            "ttl: 8h",
            "ttl: 2024-13-45",
            "SPEC:13: lifecycle.ttl: cannot read this value (month must be in 1..12)\n"
            "  hint: quote it if it is meant as text",
        ),
    ],
)
def test_numbers_python_cannot_hold_are_spec_errors_with_a_line(replace: str, by: str, expected: str) -> None:
    text = dump(BASE).decode()
    assert replace in text
    code, out, err = run_validate(text.replace(replace, by).encode())
    assert (code, out, err) == (EXIT_SPEC, "", f"{expected}\n")
