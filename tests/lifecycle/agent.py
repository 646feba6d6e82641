"""The lifecycle agent, imported from the file the role installs (it is not part of the toolkit package)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from toolkit.paths import ROLES_PATH

AGENT_PATH = ROLES_PATH / "lifecycle" / "files" / "gpuctl_lifecycle_agent.py"


def load_agent() -> ModuleType:
    name = "gpuctl_lifecycle_agent"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, AGENT_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module
