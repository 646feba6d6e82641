"""Hints a user can act on: commands that work when pasted, and "did you mean" for typed names."""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit import hints
from toolkit.catalog.checks import check_spec
from toolkit.cli import main
from toolkit.errors import EXIT_PROVIDER, SpecError
from toolkit.spec import load_spec_text

REPO = Path(__file__).resolve().parents[2]
TOOLKIT = REPO / "toolkit"
LAB_SPEC = REPO / "examples" / "local-lab.yaml"
CAPTURE = REPO / "examples" / "captures" / "h100-roce-node"


@pytest.fixture(autouse=True)
def _no_remembered_specs() -> Iterator[None]:
    saved = dict(hints._SPECS)
    hints._SPECS.clear()
    yield
    hints._SPECS.clear()
    hints._SPECS.update(saved)


# --- commands that work when pasted -------------------------------------------------------------


def test_command_is_the_gpuctl_that_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.setattr(sys, "argv", ["/opt/x/.venv/bin/gpuctl", "up", "a.yaml"])
    assert hints.command("down", "my spec.yaml") == "/opt/x/.venv/bin/gpuctl down 'my spec.yaml'"
    monkeypatch.setattr(sys, "argv", [str(TOOLKIT / "__main__.py"), "up"])
    assert hints.command("down", "a.yaml") == f"{shlex.quote(sys.executable)} -m toolkit down a.yaml"


def test_spec_command_names_the_spec_and_backend_this_run_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hints.spec_command("c1", "down") == hints.command("down", "SPEC")
    hints.remember_spec("c1", "specs/c 1.yaml", "s3://bucket/state")
    assert hints.spec_command("c1", "down") == hints.command("down", "specs/c 1.yaml", "--backend", "s3://bucket/state")
    assert hints.spec_path("c1") == "specs/c 1.yaml"
    assert hints.spec_command("other", "up") == hints.command("up", "SPEC")


def test_as_root_repeats_this_command_line_under_sudo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.setattr(sys, "argv", ["/opt/x/.venv/bin/gpuctl", "up", "lab.yaml", "--down-after"])
    assert hints.as_root() == "sudo /opt/x/.venv/bin/gpuctl up lab.yaml --down-after"


def test_a_provider_hint_names_the_spec_path_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    assert main(["outputs", str(LAB_SPEC)]) == EXIT_PROVIDER
    err = capsys.readouterr().err
    assert f"hint: create it first with `{hints.command('up', str(LAB_SPEC))}`" in err


def test_a_catalog_hint_is_the_gpuctl_that_runs(tmp_path: Path) -> None:
    key = tmp_path / "id.pub"
    key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1ZHVtbXlrZXlmb3J0ZXN0c29ubHkwMDAwMDAwMDAw t\n")
    spec = load_spec_text(
        f"name: t\nprovider: tencentcloud\nregion: ap-shanghai\nzone: ap-shanghai-5\nssh: {{public_key: {key}}}\n"
        "node_pools: [{name: gpu, instance_type: NOPE.NOPE, count: 1}]\n"
        "network: {fabric: tcp, admin_cidr: 203.0.113.0/24}\nlifecycle: {ttl: 8h, idle_stop_minutes: 30}\n"
    )
    problems = check_spec(spec).problems
    assert any(f"`{hints.command('catalog', 'tencentcloud')}` lists them" in p for p in problems), problems


# A string in toolkit/ that shows a command in backquotes must build it with hints.command; only
# docstrings (and comments, which the parser drops) may say `gpuctl ...` as prose.
BARE_COMMAND = re.compile(r"`(?:sudo )?gpuctl ")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def bare_commands(source: str) -> list[str]:
    """`(line) text` of every non-docstring string literal in `source` that shows a bare `gpuctl ...`."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    hits = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        and BARE_COMMAND.search(node.value)
    ]
    return [f"({line}) {text[:80]!r}" for line, text in sorted(hits)]


def test_the_scan_finds_bare_commands_and_spares_docstrings() -> None:
    source = (
        '"""Module: `gpuctl up SPEC` in a docstring is prose."""\n'
        "def f(x):\n"
        '    """`gpuctl down` here too."""\n'
        "    # `gpuctl down` in a comment\n"
        '    a = f"run `gpuctl down {x}` again"\n'
        "    b = 'see `sudo gpuctl up`'\n"
        "    c = f\"run `{hints.command('down', x)}` again\"\n"
    )
    assert [hit.split(")")[0] for hit in bare_commands(source)] == ["(5", "(6"]


@pytest.mark.parametrize("path", [p.relative_to(REPO).as_posix() for p in sorted(TOOLKIT.rglob("*.py"))])
def test_no_hint_prints_a_bare_gpuctl(path: str) -> None:
    source = (REPO / path).read_text(encoding="utf-8")
    try:
        found = bare_commands(source)
    except SyntaxError:
        pytest.skip(f"{path} does not parse now (being edited)")
    assert found == [], f"{path}: build these with toolkit.hints.command(...): {found}"


# --- did you mean --------------------------------------------------------------------------------


def test_set_with_a_typo_of_a_known_nccl_variable_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--set", "NCCL_IB_TIMOUT=22", str(CAPTURE)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "warning: --set NCCL_IB_TIMOUT=22: NCCL_IB_TIMOUT is not an NCCL variable gpuctl knows; "
        "did you mean NCCL_IB_TIMEOUT? (written as given)\n"
    )
    assert "NCCL_IB_TIMOUT=22" in captured.out  # the user's word wins, as every override does


@pytest.mark.parametrize("name", ["NCCL_IB_TIMEOUT", "NCCL_P2P_DISABLE", "NCCL_MAX_NCHANNELS", "NCCL_ALGO"])
def test_set_of_a_known_or_unrelated_variable_does_not_warn(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--set", f"{name}=1", str(CAPTURE)]) == 0
    assert capsys.readouterr().err == ""


def test_known_nccl_variables_come_from_the_tuning_data_and_rules() -> None:
    known = hints.known_nccl_variables()
    assert {"NCCL_IB_TIMEOUT", "NCCL_IB_QPS_PER_CONNECTION"} <= known  # nccl_defaults / vendor profiles
    assert {"NCCL_CROSS_NIC", "NCCL_NVLS_ENABLE", "NCCL_PROTO"} <= known  # written by rules only
    assert all(re.fullmatch(r"NCCL_[A-Z0-9_]+", name) for name in known)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("NCCL_IB_TIMOUT", "NCCL_IB_TIMEOUT"), ("NCCL_NVLS_ENABEL", "NCCL_NVLS_ENABLE"),
     ("NCCL_CROSSNIC", "NCCL_CROSS_NIC"), ("NCCL_IB_GID_INDX", "NCCL_IB_GID_INDEX")],
)
def test_one_typo_finds_the_variable(typed: str, meant: str) -> None:
    assert hints.unknown_nccl_variable(typed) == f"{typed} is not an NCCL variable gpuctl knows; did you mean {meant}?"


SPEC = """\
name: lab
provider: local
node_pools: [{name: node, instance_type: lab, count: 2}]
network:
  fabric: tcp
  admin_cidr: 127.0.0.0/8
lifecycle: {ttl: 8h}
"""


def test_nccl_overrides_with_a_typo_warn_with_the_nearest_name() -> None:
    spec = load_spec_text(SPEC + "nccl_overrides: {NCCL_IB_TIMOUT: 22, NCCL_P2P_DISABLE: 1, NCCL_DEBUG: WARN}\n")
    result = check_spec(spec, source="c.yaml")
    assert result.problems == []
    assert result.warnings == [
        "c.yaml: nccl_overrides.NCCL_IB_TIMOUT: NCCL_IB_TIMOUT is not an NCCL variable gpuctl knows; "
        "did you mean NCCL_IB_TIMEOUT? (written as given)"
    ]


def _problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, source="c.yaml")
    return caught.value.problems


def test_a_misspelt_spec_key_says_did_you_mean() -> None:
    text = SPEC.replace("admin_cidr", "admin_cdir").replace("count: 2}", "count: 2, imgae: debian_12}")
    assert _problems(text) == [
        "c.yaml:3: node_pools[0].imgae: unknown key; did you mean image?",
        "c.yaml:4: network.admin_cidr: required key is missing",
        "c.yaml:6: network.admin_cdir: unknown key; did you mean admin_cidr?",
    ]


def test_did_you_mean_looks_at_the_keys_of_that_place_only() -> None:
    assert _problems(SPEC.replace("{ttl: 8h}", "{ttl: 8h, idel_stop_minutes: 30}")) == [
        "c.yaml:7: lifecycle.idel_stop_minutes: unknown key; did you mean idle_stop_minutes?"
    ]
    assert _problems(SPEC + "tagz: {a: b}\n") == ["c.yaml:8: tagz: unknown key; did you mean tags?"]
    # Not a key of `network`, and nothing like one: the plain refusal.
    assert _problems(SPEC.replace("fabric: tcp", "fabric: tcp\n  zzz: 1")) == [
        "c.yaml:6: network.zzz: unknown key; remove it or check its spelling (see examples/)"
    ]


def test_did_you_mean_never_suggests_a_key_already_there() -> None:
    text = SPEC.replace("count: 2}", "count: 2, cuont: 3}")
    assert _problems(text) == [
        "c.yaml:3: node_pools[0].cuont: unknown key; remove it or check its spelling (see examples/)"
    ]
