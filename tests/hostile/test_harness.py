"""The harness's own checks can fail: a leak past gpuctl's cleaning stream is seen, a missing probe is said."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit.cli
from tests.hostile.harness import CANARIES, Outcome, Tally, run_case

pytestmark = pytest.mark.unit

SECRET = CANARIES["TENCENTCLOUD_SECRET_KEY"]


def _leaking(how: str):  # type: ignore[no-untyped-def]
    def main(argv: list[str]) -> int:
        if how == "descriptor":
            os.write(1, f"{SECRET}\n".encode())
        elif how == "child":
            subprocess.run([sys.executable, "-c", f"print({SECRET!r})"], check=True)
        elif how == "stream":
            print(SECRET, file=sys.stderr)  # the case's own stream, not wrapped here
        return 0
    return main


@pytest.mark.parametrize(("how", "where"), [("descriptor", "descriptors 1/2"), ("child", "descriptors 1/2"),
                                            ("stream", "stderr")])
def test_a_canary_that_reaches_any_output_is_a_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    how: str, where: str) -> None:
    monkeypatch.setattr(toolkit.cli, "main", _leaking(how))
    outcome = run_case(how, ["version"], home=tmp_path / "home")
    assert outcome.leaks == [where]
    assert outcome.problems() == [f"leak: {where}"]


def test_a_clean_case_has_no_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolkit.cli, "main", _leaking("nothing"))
    assert run_case("clean", ["version"], home=tmp_path / "home").leaks == []


def test_a_surface_without_an_action_probe_says_so() -> None:
    outcome = Outcome("c", 0, "", "", 0.1)
    unprobed, probed = Tally("caches"), Tally("lab")
    unprobed.record(outcome)
    probed.record(outcome, actions=[])
    assert unprobed.line() == ("caches: 1 cases (exit 0: 1); internal errors 0, hangs 0, actions on what gpuctl "
                               "did not create n/a (no probe for actions on this surface), leaks 0")
    assert probed.line() == ("lab: 1 cases (exit 0: 1); internal errors 0, hangs 0, actions on what gpuctl did "
                             "not create 0, leaks 0")
