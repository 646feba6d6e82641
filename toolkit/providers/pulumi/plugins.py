"""The Pulumi resource plugins a cloud's program needs, known by the Python SDK that drives each."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Any

from toolkit.files import expand_user, user_home


@dataclass(frozen=True)
class ProviderPlugin:
    """A Pulumi resource plugin a cloud's program needs, known by the Python SDK that drives it.

    The SDK ships `pulumi-plugin.json` (name, and version or download server); where it states no
    version, the plugin's is the package's own, as the SDK itself resolves it (`_utilities`).
    Found without importing the SDK (a large package): `gpuctl --help` never pays for it.
    """

    package: str  # the SDK's import name: pulumi_alicloud, tencentcloud_iac_pulumi
    label: str  # what a user reads: "Alibaba Cloud"

    def _manifest(self) -> dict[str, Any]:
        found = util.find_spec(self.package)
        for folder in (found.submodule_search_locations or []) if found else []:
            with contextlib.suppress(OSError, ValueError):
                manifest = json.loads((Path(folder) / "pulumi-plugin.json").read_text())
                return manifest if isinstance(manifest, dict) else {}
        return {}

    @property
    def name(self) -> str:
        return str(self._manifest().get("name") or self.package.removeprefix("pulumi_"))

    @property
    def version(self) -> str | None:
        """The plugin version, or None when the SDK is not installed."""
        stated = self._manifest().get("version")
        if stated:
            return str(stated).removeprefix("v")
        try:
            return metadata.version(self.package)
        except metadata.PackageNotFoundError:
            return None

    def install_command(self) -> str:
        server = self._manifest().get("server")
        command = f"pulumi plugin install resource {self.name} {self.version or '<version>'}"
        return command + (f" --server {server}" if server else "")

    def problem(self, env: Mapping[str, str] | None = None) -> str | None:
        """None when the plugin of the installed SDK's version is in the plugin cache
        ($PULUMI_HOME/plugins, default ~/.pulumi/plugins)."""
        env = os.environ if env is None else env
        version = self.version
        if version is None:
            return (f"the {self.package} Python package is not installed: pip install -e . "
                    "(part of gpuctl's dependencies)")
        plugins = (expand_user(env["PULUMI_HOME"], where="PULUMI_HOME") if env.get("PULUMI_HOME")
                   else user_home() / ".pulumi") / "plugins"
        if (plugins / f"resource-{self.name}-v{version}").is_dir():
            return None
        return (f"the Pulumi provider plugin for {self.label} {version} is not in {plugins}: "
                f"install it with `{self.install_command()}` (needs network once)")

