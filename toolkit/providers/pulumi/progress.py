"""Pulumi's engine events -> one progress line per resource step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.providers.base import ProgressCallback
from toolkit.providers.pulumi.stack_state import PROVIDER_TYPE_PREFIX, STACK_TYPE
from toolkit.secrets import redact

if TYPE_CHECKING:
    from pulumi.automation import EngineEvent

_VERBS = {
    "create": "creating", "update": "updating", "delete": "deleting", "replace": "replacing",
    "create-replacement": "creating replacement", "delete-replaced": "deleting replaced",
    "read": "reading", "refresh": "refreshing",
}


class ProgressReporter:
    """Engine events -> one line per resource step: `creating <type> <name> ... done`."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress

    def __call__(self, event: EngineEvent) -> None:
        if event.resource_pre_event is not None:
            line = self._step(event.resource_pre_event.metadata)
            if line:
                self.progress(f"{line} ...")
        elif event.res_outputs_event is not None:
            line = self._step(event.res_outputs_event.metadata)
            if line:
                self.progress(f"{line} ... done")
        elif event.res_op_failed_event is not None:
            line = self._step(event.res_op_failed_event.metadata)
            if line:
                self.progress(f"{line} ... failed")
        elif event.diagnostic_event is not None and event.diagnostic_event.severity == "error":
            message = redact(event.diagnostic_event.message.strip())
            if message:
                self.progress(f"error: {message}")

    @staticmethod
    def _step(metadata: Any) -> str | None:
        op = getattr(metadata.op, "value", str(metadata.op))
        verb = _VERBS.get(op)
        if verb is None or metadata.type == STACK_TYPE or str(metadata.type).startswith(PROVIDER_TYPE_PREFIX):
            return None
        name = str(metadata.urn).rsplit("::", 1)[-1]
        return f"{verb} {metadata.type} {name}"

