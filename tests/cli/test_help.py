"""Every command's --help ends with examples, and the shell completion scripts complete commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.cli import COMMANDS, build_parser
from toolkit.commands.completion import bash_script, zsh_script

REPO = Path(__file__).resolve().parents[2]


def examples_block(help_text: str) -> list[str]:
    """The lines of the `Examples:` block that ends a help text."""
    _head, found, block = help_text.rpartition("\nExamples:\n")
    assert found, "no Examples: block"
    lines = block.rstrip("\n").splitlines()
    assert all(line.startswith("  ") for line in lines), "the Examples: block is not the end of the help"
    return [line.strip() for line in lines]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_ends_with_two_or_three_examples(command: str) -> None:
    done = subprocess.run([sys.executable, "-m", "toolkit", command, "--help"], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    examples = examples_block(done.stdout)
    runs = [line for line in examples if f"gpuctl {command} " in line or f"gpuctl --json {command} " in line]
    assert 2 <= len(runs) == len(examples) <= 3, examples


def test_help_imports_neither_rich_nor_jsonschema() -> None:
    """--help stays fast: rich is imported only when progress is drawn on a terminal."""
    code = "import sys\nfrom toolkit.cli import build_parser\nbuild_parser()\n" \
           "print(','.join(m for m in ('rich', 'jsonschema') if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.strip() == ""


def test_examples_block_check_can_fail() -> None:
    with pytest.raises(AssertionError):
        examples_block("usage: gpuctl x\n\noptions:\n  -h, --help\n")


@pytest.mark.parametrize("argv", [["--quiet", "validate", "examples/local-lab.yaml"],
                                  ["status", "--quiet", "examples/local-lab.yaml"],
                                  ["up", "-q", "examples/local-lab.yaml"]])
def test_quiet_is_accepted_before_and_after_the_command(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).quiet is True


def test_without_quiet_it_is_off() -> None:
    assert build_parser().parse_args(["status", "examples/local-lab.yaml"]).quiet is False


def complete_bash(script: str, words: list[str]) -> list[str]:
    """What the generated bash completion offers for `words` (the last one being completed)."""
    words_array = " ".join(f"'{w}'" for w in words)
    program = (f"{script}\n"
               f"COMP_WORDS=({words_array}); COMP_CWORD={len(words) - 1}; COMP_LINE='{' '.join(words)}'\n"
               "_gpuctl\n"
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True, cwd=REPO)
    return done.stdout.split()


@pytest.fixture(scope="module")
def bash() -> str:
    done = subprocess.run([sys.executable, "-m", "toolkit", "completion", "bash"], capture_output=True, text=True,
                          cwd=REPO, check=True)
    return done.stdout


def test_bash_completion_completes_a_command(bash: str) -> None:
    assert complete_bash(bash, ["gpuctl", "va"]) == ["validate"]
    assert set(complete_bash(bash, ["gpuctl", "c"])) == {"catalog", "check-log", "choose", "configure", "completion",
                                                         "cost"}


def test_bash_completion_completes_options_and_choices(bash: str) -> None:
    assert "--json" in complete_bash(bash, ["gpuctl", "status", "--j"])
    assert complete_bash(bash, ["gpuctl", "--quiet", "up", "--no"]) == ["--no-configure", "--node-local"]
    assert complete_bash(bash, ["gpuctl", "completion", "z"]) == ["zsh"]
    assert complete_bash(bash, ["gpuctl", "catalog", "--fabric", "e"]) == ["erdma"]
    assert complete_bash(bash, ["gpuctl", "--de"]) == ["--debug"]


def test_bash_completion_is_registered_for_gpuctl(bash: str) -> None:
    done = subprocess.run(["bash", "-c", f"{bash}\ncomplete -p gpuctl"], capture_output=True, text=True, check=True)
    assert "-F _gpuctl gpuctl" in done.stdout


def test_every_command_and_option_is_in_both_scripts() -> None:
    parser = build_parser()
    bash_text, zsh_text = bash_script(parser), zsh_script(parser)
    for name in COMMANDS:
        assert f"        {name})" in bash_text
        assert f"                {name})" in zsh_text
    assert "--no-configure" in bash_text
    assert "--no-configure[" in zsh_text


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_parses_and_registers_itself() -> None:
    script = zsh_script(build_parser())
    program = f"autoload -Uz compinit && compinit -u -D\n{script}\nprint -r -- $_comps[gpuctl]"
    done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "_gpuctl"
