"""The lifecycle agent's decisions, with an injected clock, injected readers and a fake cloud:
the idle clock, a busy reading resetting it, the announcement before the stop, the spot notice
running the hook once, and what the readers count as busy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.lifecycle.agent import load_agent

pytestmark = pytest.mark.unit
agent_module = load_agent()
Config = agent_module.Config
IdleClock = agent_module.IdleClock


class FakeCloud:
    def __init__(self, notice: str | None = None, fail: int = 0) -> None:
        self.notice = notice
        self.fail = fail  # how many act() calls fail before one succeeds
        self.acts: list[str] = []
        self.spot_reads = 0

    def termination_time(self) -> str | None:
        self.spot_reads += 1
        return self.notice

    def act(self, action: str) -> str:
        self.acts.append(action)
        if self.fail:
            self.fail -= 1
            raise agent_module.CloudError("ServiceUnavailable")
        return "REQ-1"


def make(idle_seconds: int = 600, *, action: str = "stop", busy: list[list[str]] | None = None,
         notice: str | None = None, command: str = "", checkpoint: str = "", fail: int = 0) -> tuple[Any, ...]:
    config = Config(cloud="alicloud", metadata_url="http://md/", idle_seconds=idle_seconds, idle_action=action,
                    check_seconds=60, warn_seconds=60, spot_poll_seconds=5, on_interruption=command,
                    checkpoint_dir=checkpoint)
    readings = list(busy or [])
    events: list[tuple[str, Any]] = []
    cloud = FakeCloud(notice, fail)
    agent = agent_module.Agent(
        config, cloud,
        busy=lambda: readings.pop(0) if readings else [],
        announce=lambda message: events.append(("wall", message)),
        hook=lambda argv, env: events.append(("hook", (argv, env))),
        wall_clock=lambda: 1_700_000_000.0,
    )
    return agent, cloud, events


def test_the_idle_clock_warns_then_acts_after_the_idle_period() -> None:
    clock = IdleClock(idle_seconds=600, warn_seconds=60)
    assert clock.observe(1000, busy=False) == "idle"  # the clock starts at the first idle reading
    assert clock.observe(1539, busy=False) == "idle"
    assert clock.observe(1540, busy=False) == "warn"  # 540 s idle: 60 s before the stop
    assert clock.observe(1599, busy=False) == "idle"
    assert clock.observe(1600, busy=False) == "act"
    clock.acted = True
    assert clock.observe(1660, busy=False) == "done"


def test_a_busy_reading_resets_the_idle_clock_and_the_warning() -> None:
    clock = IdleClock(idle_seconds=600, warn_seconds=60)
    clock.observe(0, busy=False)
    assert clock.observe(550, busy=False) == "warn"
    assert clock.observe(560, busy=True) == "busy"
    assert clock.idle_since is None
    assert clock.observe(600, busy=False) == "idle"  # counted again from 600
    assert clock.observe(1150, busy=False) == "warn"
    assert clock.observe(1200, busy=False) == "act"


def test_the_announcement_always_comes_before_the_stop() -> None:
    # Readings 10 minutes apart: the threshold is passed without a warning, so that reading warns
    # and the next one acts.
    clock = IdleClock(idle_seconds=600, warn_seconds=60)
    assert clock.observe(0, busy=False) == "idle"
    assert clock.observe(600, busy=False) == "warn"
    assert clock.observe(1200, busy=False) == "act"


def test_the_agent_stops_after_idle_seconds_and_not_before() -> None:
    agent, cloud, events = make(600)
    for now in range(0, 600, 60):  # checks at 0, 60, ..., 540
        agent.tick(now)
    assert cloud.acts == []
    assert [kind for kind, _ in events] == ["wall"]  # warned at 540 s
    assert "stop in about 60 s" in events[0][1]
    agent.tick(600)
    assert cloud.acts == ["stop"]
    agent.tick(660)
    agent.tick(720)
    assert cloud.acts == ["stop"]  # once


def test_release_calls_the_release_action() -> None:
    agent, cloud, events = make(600, action="release")
    for now in range(0, 661, 60):
        agent.tick(now)
    assert cloud.acts == ["release"]
    assert "release in about" in events[0][1]


def test_use_during_the_warning_cancels_the_stop_and_says_so() -> None:
    readings: list[list[str]] = [[]] * 10 + [["GPU 0 at 97% (nvidia-smi)"]] + [[]] * 9
    agent, cloud, events = make(600, busy=readings)
    for now in range(0, 20 * 60, 60):
        agent.tick(now)
    assert cloud.acts == []
    assert [kind for kind, _ in events] == ["wall", "wall"]
    assert "cancelled" in events[1][1]


def test_a_failed_stop_is_tried_again_while_the_node_stays_idle(capsys: pytest.CaptureFixture[str]) -> None:
    agent, cloud, _ = make(600, fail=1)
    for now in range(0, 721, 60):
        agent.tick(now)
    assert cloud.acts == ["stop", "stop"]
    out = capsys.readouterr().out
    assert "gpuctl-lifecycle: stop-failed: ServiceUnavailable; trying again at the next check" in out
    assert "gpuctl-lifecycle: stop-requested: the cloud accepted the stop (request REQ-1)" in out


def test_idle_stop_off_never_reads_the_node() -> None:
    agent, cloud, events = make(0, busy=[["never read"]])
    for now in range(0, 3600, 5):
        agent.tick(now)
    assert cloud.acts == []
    assert events == []
    assert cloud.spot_reads == 720  # the spot watch runs every 5 s all the same


def test_a_spot_notice_runs_the_hook_once_with_the_time_left() -> None:
    # 1_700_000_000 is 2023-11-14T22:13:20Z; the notice is 118 s later.
    agent, cloud, events = make(0, notice="2023-11-14T22:15:18Z", command="/opt/ckpt.sh --now",
                                checkpoint="/mnt/ckpt")
    for now in range(0, 60, 1):
        agent.tick(now)
    hooks = [payload for kind, payload in events if kind == "hook"]
    assert len(hooks) == 1
    argv, env = hooks[0]
    assert argv == ["/bin/sh", "-c", "/opt/ckpt.sh --now"]
    assert env["GPUCTL_TERMINATION_TIME"] == "2023-11-14T22:15:18Z"
    assert env["GPUCTL_SECONDS_LEFT"] == "118"
    assert env["GPUCTL_CHECKPOINT_DIR"] == "/mnt/ckpt"
    assert cloud.spot_reads == 1  # nothing more to watch once the hook ran


def test_no_checkpoint_dir_means_no_variable() -> None:
    agent, _, events = make(0, notice="2023-11-14T22:15:18Z", command="true")
    agent.tick(0)
    [(_, (_, env))] = events
    assert "GPUCTL_CHECKPOINT_DIR" not in env
    assert not any(name.startswith(("ALIBABA", "ALICLOUD", "TENCENT")) for name in env)


def test_tencent_termination_time_is_utc_plus_8() -> None:
    # "2018-08-18 12:05:33" (UTC+8) is 04:05:33Z.
    now = 1534565133 - 120  # 2018-08-18T04:05:33Z minus two minutes
    assert agent_module.seconds_left("2018-08-18 12:05:33", "tencentcloud", now) == 120
    assert agent_module.seconds_left("2018-08-18T04:05:33Z", "alicloud", now) == 120
    assert agent_module.seconds_left("soon", "alicloud", now) is None
    assert agent_module.seconds_left("2018-08-18T04:05:33Z", "alicloud", now + 500) == 0


# --- Readers ---------------------------------------------------------------------------------------


def runner(outputs: dict[str, str | Exception]) -> Any:
    def run(argv: list[str]) -> str:
        answer = outputs[argv[0] if argv[0] == "who" else argv[1]]
        if isinstance(answer, Exception):
            raise answer
        return answer
    return run


def config(**values: Any) -> Any:
    return Config(cloud="alicloud", metadata_url="http://md/", **values)


UTIL = "--query-gpu=utilization.gpu"
APPS = "--query-compute-apps=pid,process_name"


def test_gpus_below_the_threshold_are_idle_and_one_above_is_busy() -> None:
    run = runner({UTIL: "0\n3\n0\n0\n"})
    assert agent_module.busy_reasons(config(), run) == []
    run = runner({UTIL: "0\n0\n42\n0\n"})
    assert agent_module.busy_reasons(config(), run) == ["GPU 2 at 42% (nvidia-smi)"]


@pytest.mark.parametrize("answer", [RuntimeError("nvidia-smi exited 9: NVIDIA-SMI has failed"), "", "N/A\n",
                                    OSError("No such file or directory")])
def test_no_utilisation_reading_counts_as_busy(answer: str | Exception) -> None:
    reasons = agent_module.busy_reasons(config(), runner({UTIL: answer}))
    assert len(reasons) == 1
    assert reasons[0].startswith("no GPU utilisation reading (")
    assert reasons[0].endswith("); never stopped without one")


def test_sessions_and_gpu_processes_count_only_when_asked() -> None:
    run = runner({UTIL: "0\n", "who": "ubuntu   pts/0        2026-12-01 10:02 (203.0.113.9)\n",
                  APPS: "4242, python3\n"})
    assert agent_module.busy_reasons(config(), run) == []
    reasons = agent_module.busy_reasons(config(idle_signals=("gpu", "ssh_sessions", "processes")), run)
    assert reasons == ["1 login session(s) (ubuntu)", "1 process(es) on the GPUs (4242, python3)"]


def test_an_unreadable_process_list_counts_as_busy() -> None:
    run = runner({UTIL: "0\n", APPS: "==============NVSMI LOG==============\n"})
    [reason] = agent_module.busy_reasons(config(idle_signals=("gpu", "processes")), run)
    assert reason.startswith("no reading of GPU processes (unreadable line")


def test_the_replayed_utilisation_file_replaces_nvidia_smi() -> None:
    run = runner({UTIL: RuntimeError("not called")})
    files = {"/etc/gpuctl/lab-utilisation": "95\n"}
    reasons = agent_module.busy_reasons(config(utilisation_file="/etc/gpuctl/lab-utilisation"), run, files.__getitem__)
    assert reasons == ["GPU 0 at 95% (replayed from /etc/gpuctl/lab-utilisation)"]


def test_the_utilisation_file_is_refused_off_a_lab_node(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lifecycle.json"
    path.write_text(json.dumps({"cloud": "alicloud", "metadata_url": "http://md/", "utilisation_file": "/x"}))
    monkeypatch.setattr(agent_module, "LAB_MARKER", str(tmp_path / "absent"))
    with pytest.raises(ValueError, match="honoured on gpuctl lab nodes only"):
        agent_module.load_config(str(path))
    (tmp_path / "marker").write_text("lab")
    monkeypatch.setattr(agent_module, "LAB_MARKER", str(tmp_path / "marker"))
    assert agent_module.load_config(str(path)).utilisation_file == "/x"


def test_an_unknown_config_key_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown keys access_key"):
        Config.from_dict({"cloud": "alicloud", "metadata_url": "http://md/", "access_key": "AK"})
    with pytest.raises(ValueError, match="is not alicloud or tencentcloud"):
        Config.from_dict({"cloud": "aws", "metadata_url": "http://md/"})
