"""Hostile-input corpora for spec values that reach nodes and files, through the real CLI (run_case).

- "nccl overrides": NCCL variable names and values (paths, plugins, line breaks, \\r, %, $(), NUL,
  very long, unicode) through `tune --set` and through a spec's nccl_overrides (`validate`, `tune
  --spec`). An action is anything NCCL would read out of the rendered nccl.conf besides the settings
  gpuctl means to write (parsed as NCCL 2.26.2 and 2.30.7 parse it, tests/hostile/nccl_parse.py), a
  file or library variable outside what gpuctl allows, a value the env rendering changes, or a
  command a shell would run from it.
- "choose --write-spec": price caches with hostile source/currency/region/zone/type fields written
  straight into prices.json. An action is a key in the written spec that gpuctl did not put there,
  or a header line that is not one comment line. A cache refused at load (exit 2) is clean too.
- "plan and up": specs with huge counts, prices, TTLs and admin_cidr edge cases. An action is `up`
  touching the driver when it had to ask first, or an SSH rule in the plan that is not IPv4.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_cost_confirm import Driver as RecordingDriver
from tests.hostile.harness import run_case, tally
from tests.hostile.nccl_parse import NCCL_226, NCCL_230, nccl_reads

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "examples" / "captures" / "h100-roce-node"
KEY = REPO / "examples" / "ssh" / "example_ed25519.pub"
# The plan-and-up specs are Tencent's, whose ImportKeyPair takes OpenSSH RSA keys only: with another
# key every case stops at validate (exit 4) and none reaches the cost check the corpus is for.
TENCENT_KEY = REPO / "examples" / "ssh" / "example_rsa.pub"

# Written out here, not read from toolkit: the NCCL variables that open a file or load a library
# (NCCL 2.30.7's source, see toolkit/tuning/data/nccl_variables.yaml) and what may reach nccl.conf.
READS_FILE = {"NCCL_CONF_FILE", "NCCL_TOPO_FILE", "NCCL_GRAPH_FILE", "NCCL_TUNER_CONFIG_FILE"}
WRITES_FILE = {"NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_PROFILE_DUMP_FILE",
               "NCCL_INSPECTOR_DUMP_DIR"}
LOADS_LIBRARY = {"NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN",
                 "NCCL_GIN_PLUGIN", "NCCL_RMA_PLUGIN", "NCCL_IBVERBS_LIB"}
LOG_FILE = re.compile(r"/var/log/gpuctl/nccl/[A-Za-z0-9._%-]+")

NAMES = ["NCCL_IB_HCA", "NCCL_DEBUG_FILE", "NCCL_NET_PLUGIN", "NCCL_TOPO_FILE", "NCCL_FUTURE_KNOB"]
VALUES = [
    "1", "none", "NONE", "", "-1", "--x", "/etc/passwd", "/var/log/gpuctl/nccl/n.%h.%p",
    "/var/log/gpuctl/nccl/../../../etc/passwd", "/var/log/gpuctl/nccl/n.%h", "libnccl-net.so", "./evil.so",
    "x\nNCCL_NET_PLUGIN=/tmp/e.so", "x\rNCCL_NET_PLUGIN=/tmp/e.so", "x\r\nNCCL_DEBUG=INFO", "x\x85y", "x\u2028y",
    "a%s%n%p%%", "$(touch PWNED)", "`touch PWNED`", "a\x00b", "x" * 1023, "x" * 5000, "\u00e9\u4e2d\u6587",
    "\u202eevil", "{{ 7*7 }}", " x ", "a=b=c", "#not-a-comment", "\\", '"', "'", "\u4e2d" * 400,
]
HOSTILE_NAMES = ["NCCL_X\n", "NCCL_X\r", "nccl_x", "NCCL_", "NCCL_" + "A" * 200, "NCCL_\u00c4", "NCCL_X Y",
                 "NCCL_$(id)", "NCCL_X%", "NCCL_X\x00", "NCCL_X_FILE", "NCCL_X_PLUGIN", "XNCCL_X"]


def _actions_in_conf(text: str, baseline: dict[str, str], intended: dict[str, str]) -> list[str]:
    """What NCCL would read out of `text` beyond `baseline` (gpuctl's own settings) and `intended`."""
    found = []
    for version in (NCCL_226, NCCL_230):
        read = nccl_reads(text, version)
        if read != {**baseline, **intended}:
            extra = {k: v for k, v in read.items() if baseline.get(k, intended.get(k)) != v}
            found.append(f"NCCL {version} reads {extra!r} from nccl.conf, meant {intended!r}"[:400])
        for name, value in read.items():
            if name in READS_FILE:
                found.append(f"NCCL {version} opens {value!r} ({name})")
            if name in LOADS_LIBRARY and value.lower() != "none":
                found.append(f"NCCL {version} loads {value!r} ({name})")
            if name in WRITES_FILE and (not LOG_FILE.fullmatch(value) or "/../" in value):
                found.append(f"NCCL {version} writes {value!r} ({name})")
    return found


def _actions_in_env(text: str, intended: dict[str, str], where: Path) -> list[str]:
    """Source the `--format env` output in a real sh: each value must come back as given, nothing run."""
    script = where / "nccl.sh"
    script.write_text(text)
    names = " ".join(f'"${name}"' for name in intended)
    done = subprocess.run(["/bin/sh", "-c", f'. ./nccl.sh && printf "%s\\0" {names}'], cwd=where, env={},
                          capture_output=True, timeout=10, check=False)
    found = []
    if (where / "PWNED").exists():
        found.append("sourcing the env file ran a command")
    values = done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
    if done.returncode != 0 or values != list(intended.values()):
        found.append(f"the env file sets {values!r}, meant {list(intended.values())!r} (rc {done.returncode})")
    return found


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What NCCL reads from the capture's nccl.conf without any override: gpuctl's own settings."""
    plain = run_case("baseline", ["tune", str(CAPTURE)], home=tmp_path_factory.mktemp("home"))
    assert plain.code == 0, plain.err
    return nccl_reads(plain.out, NCCL_226)


def _set_cases() -> Iterator[tuple[str, str, str]]:
    for name in NAMES:
        for i, value in enumerate(VALUES):
            yield f"--set {name} #{i}", name, value
    for i, name in enumerate(HOSTILE_NAMES):
        yield f"--set name #{i}", name, "1"


def test_nccl_overrides_through_tune_set(tmp_path: Path, baseline: dict[str, str]) -> None:
    surface = tally("nccl overrides")
    for label, name, value in _set_cases():
        home = tmp_path / "home"
        outcome = run_case(label, ["tune", "--set", f"{name}={value}", str(CAPTURE)], home=home)
        actions: list[str] = []
        if outcome.code == 0:
            actions += _actions_in_conf(outcome.out, baseline, {name: value})
            env = run_case(label + " env", ["tune", "--format", "env", "--set", f"{name}={value}", str(CAPTURE)],
                           home=home)
            actions += _actions_in_env(env.out, {name: value}, tmp_path) if env.code == 0 else [
                f"env rendering exit {env.code}"]
        elif outcome.code != 2:
            actions.append(f"exit {outcome.code}: neither written nor refused as usage")
        surface.record(outcome, actions=actions)
    surface.assert_clean(minimum=len(NAMES) * len(VALUES) + len(HOSTILE_NAMES))


SPEC = """\
name: c
provider: local
node_pools: [{name: node, instance_type: lab, count: 2}]
network: {fabric: tcp, admin_cidr: 127.0.0.0/8}
lifecycle: {ttl: 8h}
"""


def test_nccl_overrides_through_a_spec(tmp_path: Path) -> None:
    surface = tally("nccl overrides")
    before = surface.cases
    plain = tmp_path / "plain.yaml"
    plain.write_text(SPEC)
    untouched = run_case("spec baseline", ["tune", "--spec", str(plain), str(CAPTURE)], home=tmp_path / "home")
    assert untouched.code == 0, untouched.err
    baseline = nccl_reads(untouched.out, NCCL_226)  # the spec's tcp fabric: NCCL_IB_DISABLE=1 among them
    for i, (label, name, value) in enumerate(_set_cases()):
        spec = tmp_path / f"s{i}.yaml"
        # The value as YAML writes it (a double-quoted scalar keeps every character), under the name as given.
        spec.write_text(SPEC + yaml.safe_dump({"nccl_overrides": {name: value}}, allow_unicode=False, width=10**6))
        home = tmp_path / "home"
        checked = run_case(f"spec {label} validate", ["validate", str(spec)], home=home)
        actions = [] if checked.code in (0, 3) else [f"validate exit {checked.code}"]
        surface.record(checked, actions=actions)
        tuned = run_case(f"spec {label} tune", ["tune", "--spec", str(spec), str(CAPTURE)], home=home)
        actions = []
        if tuned.code == 0:
            if checked.code != 0:
                actions.append("tune --spec wrote a spec validate refused")
            actions += _actions_in_conf(tuned.out, baseline, {name: value})
        elif tuned.code != 3:
            actions.append(f"tune --spec exit {tuned.code}")
        surface.record(tuned, actions=actions)
    surface.assert_clean(minimum=before + 2 * (len(NAMES) * len(VALUES) + len(HOSTILE_NAMES)))


# ------------------------------------------------------------------ choose --write-spec

BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x00", "\x1b]0;t\x07"]
INJECTED = "owner: evil{b}nccl_overrides: {{NCCL_NET_PLUGIN: /tmp/e.so}}{b}tags: {{x: y}}{b}# "
WRITTEN_KEYS = ["name", "provider", "region", "zone", "node_pools", "network", "ssh", "lifecycle", "tags"]


def _entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"provider": "tencentcloud", "region": "ap-guangzhou", "zone": "ap-guangzhou-3",
                             "instance_type": "GT4.4XLARGE96", "billing": "pay_as_you_go", "currency": "CNY",
                             "value": 10.0, "read_at": "2026-12-01T00:00:00Z", "source": "live: Tencent test"}
    entry.update(changes)
    return entry


def _cache_cases() -> Iterator[tuple[str, dict[str, Any]]]:
    for i, brk in enumerate(BREAKS):
        yield f"source break #{i}", _entry(source="live: x" + brk + INJECTED.format(b=brk))
        yield f"currency break #{i}", _entry(currency="CNY" + brk + INJECTED.format(b=brk))
        yield f"region break #{i}", _entry(region="ap-guangzhou" + brk + "owner: evil")
        yield f"zone break #{i}", _entry(zone="ap-guangzhou-3" + brk + "owner: evil")
        yield f"type break #{i}", _entry(instance_type="GT4.4XLARGE96" + brk + "owner: evil")
    yield "template source", _entry(source="{{ lookup('pipe','id') }} {% raw %}")
    yield "long source", _entry(source="live: " + "x" * 100_000)
    yield "unicode source", _entry(source="live: \u4e2d\u6587 \u202eevil \ufeff")
    yield "huge value", _entry(value=1e308)
    yield "negative value", _entry(value=-5.0)
    yield "zero value", _entry(value=0.0)
    yield "not a number", _entry(value="NaN")
    yield "future read", _entry(read_at="9999-12-31T23:59:59Z")
    yield "note break", _entry(note="x\nowner: evil")


def test_choose_write_spec_from_hostile_caches(tmp_path: Path) -> None:
    surface = tally("choose --write-spec")
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_ed25519.pub").write_text(KEY.read_text())
    # The keys a written spec names (choose/spec_writer.py KEY_PATH): Tencent's must be RSA.
    (user / ".ssh" / "id_rsa.pub").write_text(TENCENT_KEY.read_text())
    (user / ".ssh" / "id_ecdsa.pub").write_text((REPO / "examples" / "ssh" / "example_ecdsa.pub").read_text())
    for i, (label, entry) in enumerate(_cache_cases()):
        home = tmp_path / f"home{i}"
        home.mkdir(mode=0o700)
        (home / "prices.json").write_text(json.dumps({"version": 1, "entries": [entry]}))
        written = tmp_path / f"out{i}.yaml"
        outcome = run_case(label, ["choose", "--gpu", "A100", "--zone", "ap-guangzhou-3", "--write-spec",
                                   str(written)], home=home, env={"HOME": str(user)})
        actions: list[str] = []
        if outcome.code == 0 and written.exists():
            text = written.read_text()
            header = [line for line in text.split("\n") if line.startswith("#")]
            body = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
            if len(header) != 7 or any(re.search("[\r\x85\u2028\u2029\x0b\x0c]", line) for line in header):
                actions.append(f"the header is not 7 comment lines: {header!r}"[:300])
            data = yaml.safe_load(text)
            if list(data) != WRITTEN_KEYS or yaml.safe_load(body) != data:
                actions.append(f"the written spec has keys {list(data)!r}")
            checked = run_case(label + " validate", ["validate", str(written)], home=home, env={"HOME": str(user)})
            surface.record(checked, actions=[] if checked.code in (0, 3, 4) else [f"validate exit {checked.code}"])
        elif outcome.code not in (0, 2):
            actions.append(f"exit {outcome.code}")
        surface.record(outcome, actions=actions)
    surface.assert_clean(minimum=5 * len(BREAKS) + 9)
    # Teeth: the specs choose writes from the clean entries must pass validate (exit 0), or the
    # validate step checks nothing.
    assert surface.codes[0] >= 20, f"only {surface.codes[0]} cases ended with exit 0: {dict(surface.codes)}"
    assert surface.codes[4] == 0, f"{surface.codes[4]} written specs failed the catalog or file checks"


# ------------------------------------------------------------------ plan and up

ADMIN = ["203.0.113.0/24", "0.0.0.0/0", "'::ffff:0:0/96'", "'::ffff:203.0.113.0/120'", "'::/0'", "'2001:db8::/32'",
         "8.0.0.0/8", "8.0.0.0/7", "10.0.0.0/8", "255.255.255.255/32", "0.0.0.0/8", "1.2.3.4/33", "1.2.3.4/24",
         "'203.0.113.0/24\\n'", "' 203.0.113.0/24'", "203.0.113.0/024", "'fe80::1%eth0/128'", "'::ffff:8.0.0.0/104'",
         "100.64.0.0/10", "'1.2.3.4/24 ; rm'", "'{{ x }}'", "[1, 2]"]


def _spec(*, pools: int = 1, count: int = 2, itype: str = "GT4.41XLARGE948", ttl: str = "8h",
          billing: str = "{mode: pay_as_you_go}", admin: str = "198.51.100.0/24", world: bool = False) -> str:
    listed = "".join(f"  - {{name: p{i}, instance_type: {itype}, count: {count}, billing: {billing}}}\n"
                     for i in range(pools))
    return ("name: huge\nprovider: tencentcloud\nregion: ap-shanghai\nzone: ap-shanghai-5\nnode_pools:\n" + listed
            + f"network: {{fabric: tcp, mtu: 1500, admin_cidr: {admin}"
            + (", allow_world_ssh: true" if world else "") + "}\n"
            + f"ssh: {{public_key: {TENCENT_KEY}}}\n"
            + f"lifecycle: {{ttl: {ttl}, idle_stop_minutes: 60, idle_action: release}}\n")


def _plan_cases() -> Iterator[tuple[str, str]]:
    for pools, count in ((1, 1), (1, 512), (16, 512)):
        for ttl in ("45m", "8h", "90d"):
            yield f"{pools}x{count} {ttl}", _spec(pools=pools, count=count, ttl=ttl)
    for billing in ("{mode: spot, spot_max_price_per_hour: 1.0e-9}", "{mode: spot, spot_max_price_per_hour: 1.0e12}",
                    "{mode: spot, spot_max_price_per_hour: .inf}", "{mode: monthly, months: 36}",
                    "{mode: monthly, months: 7}"):
        yield f"billing {billing}", _spec(pools=16, count=512, billing=billing)
    yield "unpriced HCC", _spec(itype="HCCG5v.24XLARGE384", ttl="45m")
    yield "count 513", _spec(count=513)
    yield "count 0", _spec(count=0)
    yield "17 pools", _spec(pools=17)
    for admin in ADMIN:
        yield f"admin {admin}", _spec(admin=admin)
        yield f"admin {admin} world", _spec(admin=admin, world=True)


def _ssh_rule_actions(plan: dict[str, Any]) -> list[str]:
    found = []
    for resource in plan["resources"]:
        for source in re.findall(r"tcp/22 from ([0-9a-fA-F.:/]+)", resource.get("detail") or ""):
            if not isinstance(ipaddress.ip_network(source), ipaddress.IPv4Network):
                found.append(f"an SSH rule from {source} in an IPv4 field")
    return found


def test_plan_and_up_on_huge_and_odd_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    surface = tally("plan and up")
    driver = RecordingDriver()
    monkeypatch.setattr("toolkit.commands.up.driver_for", lambda spec, args: driver)
    cases = list(_plan_cases())
    for i, (label, text) in enumerate(cases):
        spec = tmp_path / f"s{i}.yaml"
        spec.write_text(text)
        home = tmp_path / "home"
        env = {"GPUCTL_CNY_PER_USD": "7.2734@2025-02"}
        planned = run_case(label + " plan", ["plan", "--json", str(spec)], home=home, env=env)
        actions = [] if planned.code in (0, 3, 4) else [f"plan exit {planned.code}"]
        must_ask = False
        if planned.code == 0:
            plan = json.loads(planned.out)
            actions += _ssh_rule_actions(plan)
            total = plan["cost"]["for_ttl"]
            must_ask = total is None or total > 1000
        surface.record(planned, actions=actions)
        driver.calls.clear()
        up = run_case(label + " up", ["up", "--no-configure", str(spec)], home=home, env=env)
        actions = []
        if must_ask and (up.code != 2 or driver.calls):
            actions.append(f"up did not ask first: exit {up.code}, driver {driver.calls}")
        if planned.code != 0 and driver.calls:
            actions.append(f"up reached the driver ({driver.calls}) for a spec plan refused")
        surface.record(up, actions=actions)
        if planned.code == 0:
            text_plan = run_case(label + " plan text", ["plan", str(spec)], home=home, env=env)
            lines = text_plan.out.splitlines()
            wrong = [] if len(lines) > 1 and lines[1].startswith("Cost for the TTL of ") else [
                f"the TTL total is not the plan's second line: {lines[:2]!r}"]
            surface.record(text_plan, actions=wrong)
    surface.assert_clean(minimum=2 * len(cases))
    # The corpus has teeth only while some of its specs plan (exit 0) and reach up's cost question.
    assert surface.codes[0] >= 20, f"only {surface.codes[0]} plan/up cases passed validate: {dict(surface.codes)}"
    # idle_action: release, so that spot, monthly and HCC pools (which cannot stop charging) reach the
    # cost check too instead of stopping at the idle rule.
    assert surface.codes[4] == 0, f"{surface.codes[4]} plan/up cases stopped at the catalog checks"

