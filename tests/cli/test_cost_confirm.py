"""`plan` and `up` say what a cluster costs for its TTL first, and `up` asks before creating one that
costs more than GPUCTL_CONFIRM_ABOVE_CNY (default 1,000 CNY) or whose cost is unknown
(toolkit/cost_confirm.py). Prices: the examples' catalog rows; the exchange rate is pinned."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from toolkit.cli import main

REPO = Path(__file__).resolve().parents[2]
GT4 = "examples/tencentcloud-gt4-spot.yaml"  # 2 x GT4.41XLARGE948 spot at a 120 CNY ceiling for 6h: 1,440 CNY
LORA = "examples/single-gpu-lora.yaml"  # one A10 for 12h: 60 CNY
ALI = "examples/alicloud-erdma-2x8.yaml"  # no price in the catalog
LAB = "examples/local-lab.yaml"
GT4_COST = "gt4-spot costs 1,440.00 CNY ($197.98) for its TTL of 6h, above the threshold of 1,000.00 CNY ($137.49)"
DEFAULT = "(gpuctl's default; GPUCTL_CONFIRM_ABOVE_CNY sets your own)"


class Driver:
    """Stands in for a provider's driver: records whether `up` got as far as touching anything."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def exists(self, spec: Any) -> bool:
        self.calls.append("exists")
        return False

    def up(self, spec: Any, progress: Any) -> None:
        self.calls.append("up")

    def down(self, spec: Any, progress: Any) -> bool:
        self.calls.append("down")
        return True


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Driver:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GPUCTL_CNY_PER_USD", "7.2734@2025-02")
    monkeypatch.delenv("GPUCTL_CONFIRM_ABOVE_CNY", raising=False)
    fake = Driver()
    monkeypatch.setattr("toolkit.commands.up.driver_for", lambda spec, args: fake)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    return fake


def test_plan_says_the_ttl_total_on_its_second_line(driver: Driver, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", GT4]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("Cost for the TTL of 6h: 1,440.00 CNY ($197.98), 240.00 CNY/h ($33.00/h); billed until "
                        "`down` or the TTL")
    assert lines[2] == f"  up asks before creating it: {GT4_COST} {DEFAULT}; `up --yes` confirms in advance"
    assert main(["plan", LORA]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("Cost for the TTL of 12h: 60.00 CNY ($8.25), 5.00 CNY/h ($0.69/h); billed until `down` or "
                        "the TTL")
    assert lines[2] == ""  # under the threshold: nothing to ask


def test_up_without_a_terminal_refuses_before_anything_is_touched(driver: Driver,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["up", GT4, "--no-configure"]) == 2
    err = capsys.readouterr().err
    assert (f"gpuctl up: error: {GT4_COST} {DEFAULT}: nothing was created (up asks for confirmation, and there is "
            "no terminal to ask at)\n  hint: confirm in advance with `up --yes`, or set GPUCTL_CONFIRM_ABOVE_CNY "
            "above this cluster's cost") in err
    assert driver.calls == []


def test_up_yes_confirms_in_advance(driver: Driver, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["up", GT4, "--no-configure", "--yes"]) == 0
    out = capsys.readouterr().out
    assert ("gt4-spot: 2 node(s), 16 GPU(s). Cost for the TTL of 6h: 1,440.00 CNY ($197.98), 240.00 CNY/h "
            "($33.00/h); billed until `down` or the TTL\n") in out
    assert f"--yes: going on although {GT4_COST} {DEFAULT}\n" in out
    assert driver.calls == ["exists", "up"]


@pytest.mark.parametrize(("answer", "code", "calls"), [
    ("yes\n", 0, ["exists", "up"]), ("y\n", 0, ["exists", "up"]), ("no\n", 2, []), ("\n", 2, []), ("", 2, []),
])
def test_up_at_a_terminal_asks(answer: str, code: int, calls: list[str], driver: Driver,
                               monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(answer))
    assert main(["up", GT4, "--no-configure"]) == code
    err = capsys.readouterr().err
    assert f"{GT4_COST} {DEFAULT}.\nCreate gt4-spot? Type yes to go on: " in err
    if code:
        said = "'no'" if answer.strip() else "no answer"
        assert f"gpuctl up: error: not confirmed ({said}): gt4-spot was not created" in err
    assert driver.calls == calls


def test_the_threshold_is_the_users(driver: Driver, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GPUCTL_CONFIRM_ABOVE_CNY", "5000")
    assert main(["up", GT4, "--no-configure"]) == 0
    assert driver.calls == ["exists", "up"]
    monkeypatch.setenv("GPUCTL_CONFIRM_ABOVE_CNY", "0")
    assert main(["up", LORA, "--no-configure"]) == 2
    assert ("lora-box costs 60.00 CNY ($8.25) for its TTL of 12h, above the threshold of 0.00 CNY ($0.00) set by "
            "GPUCTL_CONFIRM_ABOVE_CNY: nothing was created") in capsys.readouterr().err
    for bad in ("lots", "-1", "nan", "inf"):
        monkeypatch.setenv("GPUCTL_CONFIRM_ABOVE_CNY", bad)
        assert main(["up", LORA, "--no-configure"]) == 2
        assert (f"gpuctl up: error: GPUCTL_CONFIRM_ABOVE_CNY={bad!r} is not an amount of CNY (a number, 0 or more)"
                in capsys.readouterr().err)
    assert driver.calls == ["exists", "up"]


def test_an_unknown_cost_is_asked_about(driver: Driver, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["up", ALI, "--no-configure"]) == 2
    err = capsys.readouterr().err
    assert ("gpuctl up: error: the cost of erdma-a100 for its TTL is unknown, so gpuctl cannot show it is under the "
            f"threshold of 1,000.00 CNY ($137.49) {DEFAULT}: nothing was created") in err
    assert driver.calls == []


def test_the_lab_bills_nothing_and_never_asks(driver: Driver, capsys: pytest.CaptureFixture[str]) -> None:
    """`make demo` runs `up examples/local-lab.yaml --down-after` without a terminal: no question."""
    assert main(["up", LAB, "--down-after", "--no-configure"]) == 0
    assert driver.calls == ["exists", "up", "down"]
    assert "Cost for the TTL" not in capsys.readouterr().out


def test_65536_gpus_for_four_billion_cny_are_said_and_asked_about(driver: Driver, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pools = "".join(f"  - {{name: p{i}, instance_type: GT4.41XLARGE948, count: 512}}\n" for i in range(16))
    spec = tmp_path / "huge.yaml"
    spec.write_text(
        "name: huge\nprovider: tencentcloud\nregion: ap-shanghai\nzone: ap-shanghai-5\nnode_pools:\n" + pools
        + "network: {fabric: tcp, mtu: 1500, admin_cidr: 198.51.100.0/24}\n"
        + f"ssh: {{public_key: {REPO / 'examples' / 'ssh' / 'example_rsa.pub'}}}\n"
        + "lifecycle: {ttl: 90d, idle_stop_minutes: 60}\n")
    assert main(["plan", str(spec)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("Cluster huge: tencentcloud in ap-shanghai/ap-shanghai-5, 8,192 node(s), 65,536 GPU(s), "
                        "fabric tcp, MTU 1500")
    assert lines[1] == ("Cost for the TTL of 90d: 4,202,672,947.20 CNY ($577,814,082.44), 1,945,681.92 CNY/h "
                        "($267,506.52/h); billed until `down` or the TTL")
    assert main(["up", str(spec), "--no-configure"]) == 2
    assert ("huge costs 4,202,672,947.20 CNY ($577,814,082.44) for its TTL of 90d, above the threshold of 1,000.00 "
            "CNY ($137.49)") in capsys.readouterr().err
    assert driver.calls == []
