"""Idle stop on Tencent (issue 21, item 13): StopInstances SOFT_FIRST with STOP_CHARGING, done only once
DescribeInstances shows the instance STOPPING or STOPPED, never a stop that keeps billing.

What Tencent documents: StopInstances only starts the stop ("本接口为异步接口 ... 如果实例的最新操作状态
(LatestOperationState)为“SUCCESS”，则代表关闭实例操作成功", cvm_client.py:2600-2607 of SDK 3.1.178);
StopType SOFT (the default) does not force a shutdown that fails, SOFT_FIRST does (models.py:22621);
UnsupportedOperation.StoppedModeStopCharging: "不支持关机不收费特性" (errorcodes.py:1229-1230). The provider's
own stop polls LatestOperationState (OPERATING, FAILED), then InstanceState STOPPED
(terraform-provider-tencentcloud v1.82.42 resource_tc_instance.go:2803-2858).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.lifecycle.agent import load_agent

pytestmark = pytest.mark.unit
agent_module = load_agent()


class TencentCloud:
    """A cloud whose stop is accepted and whose DescribeInstances answers `states` in turn (the last one
    repeats); `refuse` is the error code of every StopInstances."""

    def __init__(self, states: list[dict[str, str]], refuse: str = "") -> None:
        self.states = states
        self.refuse = refuse
        self.acts: list[str] = []
        self.reads = 0

    def termination_time(self) -> str | None:
        return None

    def act(self, action: str) -> str:
        self.acts.append(action)
        if self.refuse:
            raise agent_module.CloudError(f"StopInstances answered 200: {self.refuse} 不支持关机不收费特性",
                                          code=self.refuse)
        return "REQ-TC"

    def stop_state(self) -> dict[str, str]:
        self.reads += 1
        state = self.states[min(self.reads - 1, len(self.states) - 1)]
        if state.get("error"):
            raise agent_module.CloudError(state["error"])
        return state


def make(cloud: TencentCloud) -> Any:
    config = agent_module.Config(cloud="tencentcloud", metadata_url="http://md/", idle_seconds=600,
                                 check_seconds=60, warn_seconds=60, spot_poll_seconds=5, confirm_seconds=10,
                                 confirm_timeout_seconds=120)
    return agent_module.Agent(config, cloud, busy=lambda: [], announce=lambda message: None,
                              hook=lambda argv, env: None, wall_clock=lambda: 1_700_000_000.0)


def run(agent: Any, until: int) -> None:
    for now in range(0, until + 1):
        agent.tick(now)


RUNNING = {"InstanceState": "RUNNING", "LatestOperation": "StopInstances", "LatestOperationState": "OPERATING"}


def test_a_stop_is_done_once_the_instance_is_stopping(capsys: pytest.CaptureFixture[str]) -> None:
    cloud = TencentCloud([RUNNING, RUNNING, {"InstanceState": "STOPPING", "LatestOperation": "StopInstances",
                                             "LatestOperationState": "OPERATING", "StopChargingMode": ""}])
    agent = make(cloud)
    run(agent, 1200)
    assert cloud.acts == ["stop"]
    assert cloud.reads == 3  # 610, 620, 630 s: confirmed, no read after
    assert agent.clock.acted is True
    out = capsys.readouterr().out
    assert "gpuctl-lifecycle: stop-requested: the cloud accepted the stop (request REQ-TC)" in out
    assert "gpuctl-lifecycle: stopped: the instance is STOPPING after 30 s" in out


def test_a_stop_tencent_reports_failed_is_not_done_and_is_sent_again(capsys: pytest.CaptureFixture[str]) -> None:
    failed = {"InstanceState": "RUNNING", "LatestOperation": "StopInstances", "LatestOperationState": "FAILED"}
    stopped = {"InstanceState": "STOPPED", "LatestOperation": "StopInstances", "LatestOperationState": "SUCCESS",
               "StopChargingMode": "STOP_CHARGING"}
    cloud = TencentCloud([failed, stopped])
    agent = make(cloud)
    run(agent, 700)
    assert cloud.acts == ["stop", "stop"]  # at 600 s, and again at the next idle check (660 s)
    assert agent.clock.acted is True
    out = capsys.readouterr().out
    assert ("gpuctl-lifecycle: stop-failed: Tencent reports the stop FAILED (state RUNNING); not done: the next idle "
            "check stops again") in out


def test_a_stop_never_seen_within_the_timeout_is_not_done(capsys: pytest.CaptureFixture[str]) -> None:
    still = {"InstanceState": "RUNNING", "LatestOperation": "StopInstances", "LatestOperationState": "SUCCESS"}
    cloud = TencentCloud([{"error": "DescribeInstances answered 200: UnauthorizedOperation denied"}, still])
    agent = make(cloud)
    run(agent, 800)
    assert agent.clock.acted is False
    assert cloud.acts[:2] == ["stop", "stop"]
    out = capsys.readouterr().out
    assert "stop-unconfirmed: cannot read the instance's state: DescribeInstances answered 200" in out
    assert "stop-failed: not stopped after 120 s (state RUNNING)" in out


def test_a_refused_no_charge_stop_leaves_the_node_running_and_stops_asking(capsys: pytest.CaptureFixture[str]) -> None:
    cloud = TencentCloud([], refuse="UnsupportedOperation.StoppedModeStopCharging")
    agent = make(cloud)
    run(agent, 3600)
    assert cloud.acts == ["stop"]  # never again, and never a release the spec did not ask for
    assert cloud.reads == 0
    assert agent.clock.acted is False
    out = capsys.readouterr().out
    assert ("gpuctl-lifecycle: stop-refused: StopInstances answered 200: "
            "UnsupportedOperation.StoppedModeStopCharging") in out
    assert "set lifecycle.idle_action: release" in out


def test_an_alibaba_stop_is_still_done_when_accepted() -> None:
    """The confirmation is Tencent's (StopInstances is asynchronous there); Alibaba's path is unchanged."""
    cloud = TencentCloud([])
    config = agent_module.Config(cloud="alicloud", metadata_url="http://md/", idle_seconds=600, check_seconds=60,
                                 warn_seconds=60, spot_poll_seconds=5)
    agent = agent_module.Agent(config, cloud, busy=lambda: [], announce=lambda message: None,
                               hook=lambda argv, env: None, wall_clock=lambda: 1_700_000_000.0)
    run(agent, 700)
    assert cloud.acts == ["stop"]
    assert cloud.reads == 0
    assert agent.clock.acted is True
