"""Stand-ins for the CLI tests: a provider that creates nothing and a configure that runs nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolkit.configure.ansible_run import NodeResult, RunResult
from toolkit.providers.base import ClusterOutputs, NodeOutput


class FakeDriver:
    """A provider that creates nothing: what `up`/`down` JSON is built from, without a lab or a cloud."""

    name = "local"

    def __init__(self, exists: bool = False) -> None:
        self.existed = exists
        self.removed = False
        self.kept: list[str] = []
        self.deleted_storage: list[str] = []

    def outputs(self, spec: Any) -> ClusterOutputs:
        nodes = [NodeOutput(name=f"{spec.name}-node-{i}", pool="node", instance_id=f"ns{i}", instance_type="lab",
                            private_ip=f"10.0.0.{10 + i}", ssh_host=f"10.0.0.{10 + i}") for i in range(2)]
        return ClusterOutputs(cluster=spec.name, provider="local", fabric="tcp", mtu=8500, nodes=nodes)

    def up(self, spec: Any, progress: Callable[[str], None]) -> ClusterOutputs:
        progress("creating nothing at all")
        return self.outputs(spec)

    def status(self, spec: Any) -> dict[str, object]:
        return {"phase": "up"}

    def exists(self, spec: Any) -> bool:
        return self.existed

    def down(self, spec: Any, progress: Callable[[str], None], *, delete_storage: bool = False) -> bool:
        progress("removing nothing at all")
        self.removed = True
        return True

    def revive(self, spec: Any, progress: Callable[[str], None]) -> list[str]:
        return []


def fake_configure(ok: bool = True) -> Callable[..., RunResult]:
    def configure(spec: Any, outputs: ClusterOutputs, progress: Callable[[str], None], *,
                  full: bool = False, nodes: list[str] | None = None, node_local: bool = False) -> RunResult:
        progress("configuring nothing at all")
        first, second = (n.name for n in outputs.nodes)
        results = {
            first: NodeResult(first, verified=True),
            second: NodeResult(second, ok=ok, changed=3, reason="no record of a successful run",
                               roles={"mtu": "changed", "nccl_conf": "ok" if ok else "failed"},
                               failed_task=None if ok else "nccl_conf: install", message=None if ok else "boom"),
        }
        return RunResult(nodes={k: v for k, v in results.items() if nodes is None or k in nodes}, rc=0 if ok else 2)
    return configure


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    driver = FakeDriver()
    monkeypatch.setattr("toolkit.commands._driver.driver_for", lambda spec, args: driver)
    monkeypatch.setattr("toolkit.commands.up.driver_for", lambda spec, args: driver)
    monkeypatch.setattr("toolkit.commands.configure.driver_for", lambda spec, args: driver)
    monkeypatch.setattr("toolkit.commands.down.driver_for", lambda spec, args: driver)
    monkeypatch.setattr("toolkit.configure.configure", fake_configure())
    return driver
