"""One word for one thing across commands: the fabric names, the exit code of a missing input
file, and "ok" in summaries."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import get_args

import pytest

from toolkit.catalog.checks import check_spec
from toolkit.catalog.store import load_catalog
from toolkit.cli import build_parser, main
from toolkit.commands.catalog import fabric_of
from toolkit.configure.ansible_run import NodeResult
from toolkit.errors import EXIT_USAGE
from toolkit.spec import load_spec_text
from toolkit.spec.models import Fabric

REPO = Path(__file__).resolve().parents[2]
LAB_SPEC = REPO / "examples" / "local-lab.yaml"
CAPTURE = REPO / "examples" / "captures" / "h100-roce-node"
# ECDSA, since Alibaba's ImportKeyPair takes no ed25519 key.
KEY = (Path(__file__).resolve().parents[1] / "providers" / "specs" / "test_ecdsa.pub").read_text()


def _option(command: str, option: str) -> argparse.Action:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action: argparse.Action = sub.choices[command]._option_string_actions[option]
    return action


# --- fabric -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["catalog", "tune"])
def test_fabric_option_takes_the_spec_words(command: str) -> None:
    action = _option(command, "--fabric")
    words = tuple(get_args(Fabric))
    assert words == ("erdma", "rdma", "tcp")
    if action.choices is not None:
        assert tuple(action.choices) == words
    else:  # catalog: a type function that also takes the deprecated words (not shown in help)
        assert action.metavar == "{erdma,rdma,tcp}"
        assert action.type is not None
        assert [action.type(w) for w in words] == list(words)  # type: ignore[operator]


def _catalog(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[list[dict[str, object]], str]:
    assert main(["catalog", *words, "--json"]) == 0
    captured = capsys.readouterr()
    rows: list[dict[str, object]] = json.loads(captured.out)
    return rows, captured.err


def test_catalog_fabric_filters_by_the_spec_fabric(capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, set[str]] = {}
    for fabric in get_args(Fabric):
        rows, err = _catalog(capsys, "--fabric", fabric)
        assert err == ""
        assert rows, fabric
        assert {r["fabric"] for r in rows} == {fabric}
        seen[fabric] = {str(r["name"]) for r in rows}
    assert "ecs.ebmgn7ex.32xlarge" in seen["erdma"]
    assert all(r["rdma"] is None for r in _catalog(capsys, "--fabric", "tcp")[0])
    assert seen["erdma"].isdisjoint(seen["rdma"])
    everything, _ = _catalog(capsys)
    assert set().union(*seen.values()) == {str(r["name"]) for r in everything}


@pytest.mark.parametrize(("old", "link_layer"), [("roce", "ethernet"), ("ib", "infiniband")])
def test_old_catalog_words_work_with_a_deprecation_warning(
    capsys: pytest.CaptureFixture[str], old: str, link_layer: str
) -> None:
    rows, err = _catalog(capsys, "--fabric", old)
    assert err == f"warning: --fabric {old} is deprecated; use --fabric rdma --link-layer {link_layer}\n"
    new_rows, new_err = _catalog(capsys, "--fabric", "rdma", "--link-layer", link_layer)
    assert new_err == ""
    assert rows == new_rows
    assert all(r["fabric"] == "rdma" and r["link_layer"] == link_layer for r in rows)


def test_catalog_refuses_other_fabric_words(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["catalog", "--fabric", "infiniband"])
    assert caught.value.code == EXIT_USAGE
    assert "choose from erdma, rdma, tcp" in capsys.readouterr().err


def test_catalog_fabric_is_what_the_spec_checks_accept(tmp_path: Path) -> None:
    """A type listed under `--fabric F` is one a spec with `network.fabric: F` may use, and no other."""
    key = tmp_path / "id.pub"
    key.write_text(KEY)
    where = {"alicloud": ("cn-beijing", "cn-beijing-l"), "tencentcloud": ("ap-shanghai", "ap-shanghai-5")}
    for provider, (region, zone) in where.items():
        for row in load_catalog(provider).instance_types:
            if row.gpu is None:
                continue
            for fabric in ("erdma", "rdma"):
                spec = load_spec_text(
                    f"name: t\nprovider: {provider}\nregion: {region}\nzone: {zone}\n"
                    f"node_pools: [{{name: gpu, instance_type: {row.name}, count: 2}}]\n"
                    f"network: {{fabric: {fabric}, mtu: 8500, admin_cidr: 203.0.113.0/24}}\n"
                    f"ssh: {{public_key: {key}}}\nlifecycle: {{ttl: 8h}}\n"
                )
                refused = [p for p in check_spec(spec).problems if ".instance_type:" in p or "network.fabric:" in p]
                if fabric_of(row) == fabric:
                    assert refused == [], (row.name, fabric)
                else:
                    assert refused, (row.name, fabric)


# --- one exit code for a path that is not there ---------------------------------------------------

MISSING = "/nonexistent-gpuctl-test/input"
# Every command that reads a path, with that path missing.
MISSING_CASES = [
    pytest.param(["validate", MISSING], id="validate"),
    pytest.param(["plan", MISSING], id="plan"),
    pytest.param(["up", MISSING], id="up"),
    pytest.param(["configure", MISSING], id="configure"),
    pytest.param(["status", MISSING], id="status"),
    pytest.param(["ssh", MISSING, "node-0"], id="ssh"),
    pytest.param(["down", MISSING], id="down"),
    pytest.param(["outputs", MISSING], id="outputs"),
    pytest.param(["tune", MISSING], id="tune"),
    pytest.param(["tune", "--spec", MISSING, str(CAPTURE)], id="tune--spec"),
    pytest.param(["check-log", MISSING], id="check-log"),
    pytest.param(["detect", MISSING], id="detect"),
    pytest.param(["check-log", "{log}", "--topology", MISSING], id="check-log--topology"),
]


@pytest.mark.parametrize("argv", MISSING_CASES)
def test_a_missing_input_path_exits_2_with_one_line_naming_it(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    log = tmp_path / "nccl.log"
    log.write_text("host:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
    code = main([word.replace("{log}", str(log)) for word in argv])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert MISSING in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["plan", "status"])
def test_a_directory_given_as_a_spec_exits_2(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, str(tmp_path)]) == EXIT_USAGE
    assert capsys.readouterr().err.splitlines() == [
        f"gpuctl {command}: error: {tmp_path}: is a directory, not a regular file; give a cluster spec YAML file, "
        "e.g. examples/local-lab.yaml"
    ]


def test_a_spec_that_is_there_but_wrong_still_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    assert main(["plan", str(bad)]) == 3


# --- ok ------------------------------------------------------------------------------------------


def test_node_summaries_say_ok_in_lower_case() -> None:
    assert NodeResult("n0", changed=2).line() == "n0: ok (2 changed)"
    assert NodeResult("n0", verified=True).line() == "n0: ok (verified, 0 changed)"
    assert NodeResult("n0", changed=1, reason="roles changed").line() == "n0: ok (1 changed; full run: roles changed)"


def test_the_light_vocabulary_module_matches_the_spec_types() -> None:
    from typing import get_args

    from toolkit import vocabulary
    from toolkit.spec.models import Fabric, Provider

    assert vocabulary.FABRICS == get_args(Fabric) == ("erdma", "rdma", "tcp")
    assert vocabulary.PROVIDERS == get_args(Provider) == ("alicloud", "tencentcloud", "local")
