"""The command line: exit codes, no tracebacks, help that starts without the heavy SDKs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.errors import EXIT_CATALOG, EXIT_INTERNAL, EXIT_SPEC, EXIT_USAGE

REPO = Path(__file__).resolve().parents[2]


def test_help_does_not_import_cloud_sdks() -> None:
    code = (
        "import sys\n"
        "from toolkit.cli import build_parser\n"
        "build_parser()\n"
        "heavy = ('pulumi', 'pulumi_alicloud', 'tencentcloud', 'ansible_runner', 'ansible')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == ""


def test_python_dash_m_prints_help() -> None:
    result = subprocess.run([sys.executable, "-m", "toolkit", "--help"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0
    assert "validate" in result.stdout
    assert "plan" in result.stdout


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["plan"])
    assert caught.value.code == EXIT_USAGE


def test_spec_error_exit_code_and_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nprovider: local\n")
    assert main(["plan", str(spec)]) == EXIT_SPEC
    err = capsys.readouterr().err
    assert err.startswith(f"gpuctl plan: error: {spec}:1: node_pools: required key is missing\n")
    assert "Traceback" not in err


def test_catalog_error_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        (REPO / "examples" / "alicloud-erdma-2x8.yaml")
        .read_text()
        .replace("ecs.ebmgn7ex.32xlarge", "ecs.gn6i-c4g1.xlarge")
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("ssh/example_ecdsa.pub", str(REPO / "examples" / "ssh" / "example_ecdsa.pub")))
    assert main(["validate", str(bad)]) == EXIT_CATALOG
    err = capsys.readouterr().err
    assert "ecs.gn6i-c4g1.xlarge has no eRDMA interface (ERI) support" in err


def test_internal_error_has_no_traceback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def explode(_: object) -> int:
        raise RuntimeError("boom")

    import toolkit.commands.validate as validate

    monkeypatch.setattr(validate, "run", explode)
    assert main(["validate", "x.yaml"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err == (
        "gpuctl validate: internal error (a bug in gpuctl). Re-run with --debug for the traceback and report it.\n"
    )
