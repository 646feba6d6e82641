"""Automation API exceptions -> gpuctl errors with the useful lines of Pulumi's output, redacted."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping

from toolkit.errors import GpuctlError, MissingToolError, ProviderError
from toolkit.providers.pulumi.cli import install_cli_version_command, missing_cli_error
from toolkit.providers.pulumi.plugins import ProviderPlugin
from toolkit.secrets import redact


def pulumi_failure(
    exc: BaseException, env: Mapping[str, str] | None = None, *, cloud: str = "the cloud",
    plugins: tuple[ProviderPlugin, ...] = (),
) -> GpuctlError:
    """Turn an Automation API exception into a gpuctl error with the useful part of the output."""
    text = redact(str(exc), env)
    if isinstance(exc, FileNotFoundError) or "executable file not found" in text:
        return missing_cli_error(cloud, plugins)
    sdk_errors = sys.modules.get("pulumi.automation.errors")  # not loaded: exc cannot be one of its errors
    if sdk_errors is not None and isinstance(exc, sdk_errors.InvalidVersionError):
        # The SDK's own version check (the CLI changed after preflight, or its skip variable is set).
        return MissingToolError(
            f"the Pulumi CLI cannot do this for gpuctl: {text.strip()}",
            hint=f"upgrade it with `{install_cli_version_command()}`",
        )
    for plugin in plugins:
        name = re.escape(plugin.name)
        if re.search(rf"no resource plugin '?(pulumi-resource-)?{name}|could not find plugin.*{name}", text):
            return MissingToolError(
                f"the Pulumi provider plugin for {plugin.label} is not installed",
                hint=f"install it with `{plugin.install_command()}` (needs network once)",
            )
    lines = _error_lines(text)
    message = "; ".join(lines) if lines else "pulumi failed without an error message"
    if "passphrase" in text and "incorrect" in text:
        return ProviderError(message, hint="PULUMI_CONFIG_PASSPHRASE differs from the one this stack was made with")
    if "conflict" in text.lower() and "update" in text.lower() and "progress" in text.lower():
        return ProviderError(message, hint="another up/down runs on this stack; wait, or `pulumi cancel`")
    return ProviderError(f"pulumi: {message}")


def _error_lines(text: str, limit: int = 8) -> list[str]:
    seen: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        match = re.search(r"\berror: (.*)", line)
        if match is None:
            continue
        found = match.group(1).strip()
        if found and found not in seen and not found.startswith("update failed"):
            seen.append(found)
    if seen:
        return seen[:limit]
    # CommandError's text is "code: N / stdout: ... / stderr: ...": keep the end of stderr.
    stderr = text.rsplit("stderr:", 1)[-1]
    tail = [line.strip() for line in stderr.splitlines() if line.strip()]
    return tail[-3:]

