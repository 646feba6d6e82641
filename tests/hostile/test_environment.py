"""The environment as hostile input: GPUCTL_HOME and HOME in every shape a prober found, through the
commands that read or write the gpuctl home.

Each case runs the real CLI with the canary credentials set (tests/hostile/harness.py) and must end
in a clean answer: exit 0, or a refusal naming the variable (exit 2 for the home, 7 for a missing
privilege), never an internal error, a hang or a leak, and never a file written outside the home
(the current directory is checked, since an empty GPUCTL_HOME once wrote there).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.harness import Outcome, run_case, tally
from tests.hostile.lab_fake import FakeHost
from toolkit.errors import EXIT_USAGE

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "hostile-home"  # a name no other test's lab uses: `down` acts on the lab of this name
TAG = "gl-1958e"  # "gl-" + sha256("hostile-home")[:5], the lab's own prefix for its links and namespaces


def lab_spec(directory: Path) -> Path:
    """A lab spec of its own name (the examples' lab is `lab`), its capture path written out."""
    text = (REPO / "examples" / "local-lab.yaml").read_text()
    text = text.replace("name: lab\n", f"name: {CLUSTER}\n")
    text = text.replace("capture: captures/h100-roce-node", f"capture: {REPO}/examples/captures/h100-roce-node")
    path = directory / "spec.yaml"
    path.write_text(text)
    return path


def commands(spec: Path) -> list[list[str]]:
    """What reads or writes the home: the price cache and rate (plan, choose), cluster state (status),
    the lock and state (down), and two that never touch it (validate, catalog)."""
    return [
        ["validate", str(spec)],
        ["plan", str(spec)],
        ["plan", str(REPO / "examples" / "alicloud-erdma-2x8.yaml")],
        ["status", str(spec)],
        ["choose", "--gpu-memory", "80", "--gpus", "16", "--hours", "10"],
        ["catalog", "tencentcloud"],
        ["down", str(spec)],
    ]


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """An empty current directory for the case: nothing may appear in it."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        yield cwd
    finally:
        os.chdir(before)


def homes(tmp_path: Path) -> dict[str, tuple[dict[str, str], list[str]]]:
    """label -> (environment, variables to drop)."""
    a_file = tmp_path / "home-is-a-file"
    a_file.write_text("not a directory\n")
    linked = tmp_path / "real-home"
    linked.mkdir()
    (tmp_path / "linked-home").symlink_to(linked)
    user_home = tmp_path / "user"
    user_home.mkdir()
    return {
        "empty GPUCTL_HOME": ({"GPUCTL_HOME": "", "HOME": str(user_home)}, []),
        "unset GPUCTL_HOME": ({"HOME": str(user_home)}, ["GPUCTL_HOME"]),
        "~nosuchuser": ({"GPUCTL_HOME": "~gpuctl-no-such-user/state"}, []),
        "HOME of no user": ({"HOME": "~gpuctl-no-such-user"}, ["GPUCTL_HOME"]),
        "a file": ({"GPUCTL_HOME": str(a_file)}, []),
        "below a file": ({"GPUCTL_HOME": str(a_file / "below")}, []),
        "in /proc": ({"GPUCTL_HOME": "/proc/gpuctl-cannot-be-here"}, []),
        "percent": ({"GPUCTL_HOME": str(tmp_path / "50%h-off")}, []),
        "dollar": ({"GPUCTL_HOME": str(tmp_path / "$HOME")}, []),
        "quote": ({"GPUCTL_HOME": str(tmp_path / 'say"cheese')}, []),
        "backslash": ({"GPUCTL_HOME": str(tmp_path / "back\\slash")}, []),
        "newline": ({"GPUCTL_HOME": str(tmp_path / "two\nlines")}, []),
        "escape": ({"GPUCTL_HOME": str(tmp_path / "\x1b[2Jclear")}, []),
        "relative": ({"GPUCTL_HOME": "relative-home"}, []),
        "space": ({"GPUCTL_HOME": str(tmp_path / "with space")}, []),
        "a link to a directory": ({"GPUCTL_HOME": str(tmp_path / "linked-home")}, []),
        "very long": ({"GPUCTL_HOME": str(tmp_path / ("d" * 250) / ("e" * 250) / ("f" * 250))}, []),
    }


# The homes that must be refused (exit 2, naming the variable) by any command that uses the home.
REFUSED = {"~nosuchuser", "HOME of no user", "a file", "below a file", "percent", "dollar", "quote",
           "backslash", "newline", "escape"}
# A home that does not exist is fine to read (nothing there); the first write must be refused cleanly.
UNWRITABLE = {"in /proc"}
WRITERS = {"down"}
# Commands that never look at the home: they answer whatever it is.
HOMELESS = {"validate", "catalog"}


def check(outcome: Outcome, label: str, argv: list[str], cwd: Path) -> list[str]:
    """Beyond the harness' own checks: the answer a home of this kind must get."""
    problems = []
    command = argv[0]
    refused = label in REFUSED or (label in UNWRITABLE and command in WRITERS)
    if refused and command not in HOMELESS and outcome.code not in (EXIT_USAGE, 7):
        problems.append(f"expected a refusal of the home (exit 2), got {outcome.code}: {outcome.err[-200:]}")
    if refused and outcome.code == EXIT_USAGE and "HOME" not in outcome.err and "/proc" not in outcome.err:
        problems.append(f"the refusal does not name the variable: {outcome.err[-200:]}")
    if "\x1b" in outcome.out + outcome.err:
        problems.append("a raw escape character was printed")
    if label != "relative" and any(cwd.iterdir()):
        problems.append(f"wrote into the current directory: {sorted(p.name for p in cwd.iterdir())}")
    return problems


def fake_host(env: dict[str, str], cwd: Path, fallback: Path) -> FakeHost:
    """The lab host `down` and `status` meet in a case: fake (lab_fake.py), so the unit tier never
    touches this machine's links, namespaces or processes; its home is the one the case names."""
    home = env.get("GPUCTL_HOME") or (f"{env['HOME']}/.gpuctl" if env.get("HOME") else str(fallback))
    return FakeHost(CLUSTER, TAG, Path(os.path.join(cwd, home)))


def test_every_home_gets_a_clean_answer(tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = lab_spec(tmp_path)
    surface = tally("environment")
    cases = homes(tmp_path)
    for label, (env, drop) in cases.items():
        for argv in commands(spec):
            case = f"{label}: gpuctl {argv[0]}"
            host = fake_host(env, workdir, tmp_path / "unused")
            with host.installed(monkeypatch):
                outcome = run_case(case, argv, home=tmp_path / "unused", env=env, drop=drop, timeout=30)
            extra = check(outcome, label, argv, workdir) + host.foreign()
            surface.record(outcome, actions=extra)
            for entry in workdir.iterdir():  # `relative` writes here on purpose; start the next case clean
                subprocess.run(["rm", "-rf", "--", str(entry)], check=False)
    surface.assert_clean(minimum=len(cases) * len(commands(spec)))


def test_an_empty_home_means_the_default(tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty GPUCTL_HOME is the default ~/.gpuctl, never the current directory."""
    user = tmp_path / "user"
    user.mkdir()
    host = FakeHost(CLUSTER, TAG, user / ".gpuctl")
    with host.installed(monkeypatch):
        outcome = run_case("empty", ["down", str(lab_spec(tmp_path))], home=tmp_path / "unused",
                           env={"GPUCTL_HOME": "", "HOME": str(user)})
    assert host.foreign() == []
    assert outcome.code in (0, 7), outcome.err
    assert not any(workdir.iterdir())
    if outcome.code == 0:  # as root: down took the cluster's lock in the default home
        assert (user / ".gpuctl" / "locks" / f"{CLUSTER}.lock").is_file()


@pytest.mark.parametrize(("value", "shown"), [
    ("/tmp/x/50%off", "'%' in the path would be read as syntax by ssh or Ansible"),
    ("~gpuctl-no-such-user/x", "~gpuctl-no-such-user names no user on this machine"),
    ("/tmp/a\nb", "GPUCTL_HOME holds a control character"),
])
def test_a_home_that_tools_would_misread_is_refused_by_name(tmp_path: Path, value: str, shown: str) -> None:
    outcome = run_case(value, ["status", str(lab_spec(tmp_path))], home=tmp_path, env={"GPUCTL_HOME": value})
    assert outcome.code == EXIT_USAGE
    assert shown in outcome.err
    assert outcome.err.startswith("gpuctl status: error: ")


# --- ALIBABA_CLOUD_ACCOUNT_TYPE: the site a spot ceiling is priced on (toolkit/providers/alicloud/site.py) ---

ACCOUNT_TYPES = {
    # value -> the currency validate/plan must say the ceiling goes in (None: unknown, `up` refuses)
    "Domestic": "CNY", "domestic": "CNY", "  INTERNATIONAL ": "USD", "International": "USD",
    "": None, "   ": None, "intl": None, "China": None, "Domestic\n": "CNY", "Domestic\nInternational": None,
    "\x1b[2JInternational": None, "International; rm -rf /": None, "Ｄｏｍｅｓｔｉｃ": None, "0": None,
    "d" * 5000: None, "../../etc/passwd": None, "$(whoami)": None, "%s%s%n": None,
}


def test_every_account_type_gets_a_clean_statement_of_the_spot_ceiling(tmp_path: Path, workdir: Path) -> None:
    """validate and plan of the spot example (a 5 CNY ceiling) under every value: exit 0 with the
    currency it goes in, or the refusal `up` will make, never a crash, an escape or a leak."""
    surface = tally("environment")
    spec = REPO / "examples" / "single-gpu-lora.yaml"
    for value, currency in ACCOUNT_TYPES.items():
        for command in ("validate", "plan"):
            outcome = run_case(f"ALIBABA_CLOUD_ACCOUNT_TYPE={value[:20]!r}: gpuctl {command}", [command, str(spec)],
                               home=tmp_path / "home", env={"ALIBABA_CLOUD_ACCOUNT_TYPE": value}, timeout=30)
            said = outcome.out + outcome.err
            extra = []
            if outcome.code != 0:
                extra.append(f"exit {outcome.code}: {outcome.err[-200:]}")
            elif currency is not None and "sent as " not in said:
                extra.append("the ceiling's currency is not stated")
            elif currency is not None and f" {currency}/h (ALIBABA_CLOUD_ACCOUNT_TYPE=" not in said:
                extra.append(f"not stated as {currency}")
            elif currency is None and "`up` refuses until it is set" not in said:
                extra.append("an unknown site is not said to be refused by up")
            if "\x1b" in said:
                extra.append("a raw escape character was printed")
            surface.record(outcome, actions=extra)
    surface.assert_clean(minimum=2 * len(ACCOUNT_TYPES))
