"""Every variable of the roles this file covers is prefixed with its role's name, defaulted and
commented in defaults/main.yml, and listed in the role's README."""

from __future__ import annotations

import pytest
import yaml

from toolkit.paths import ROLES_PATH

ROLES = ("nvidia_driver", "cuda", "nccl", "rdma_userspace", "erdma", "rdma", "mtu", "nccl_conf")


@pytest.mark.parametrize("role", ROLES)
def test_defaults_are_prefixed_commented_and_listed_in_the_readme(role: str) -> None:
    path = ROLES_PATH / role / "defaults" / "main.yml"
    defaults = yaml.safe_load(path.read_text())
    lines = path.read_text().splitlines()
    readme = (ROLES_PATH / role / "README.md").read_text()
    for name in defaults:
        assert name.startswith(role + "_"), name
        assert f"| `{name}` |" in readme, f"{name} missing from {role}/README.md"
        at = next(i for i, line in enumerate(lines) if line.startswith(name + ":"))
        assert lines[at - 1].startswith("#"), f"{name} has no comment above it"


@pytest.mark.parametrize("role", ROLES)
def test_os_vars_are_prefixed(role: str) -> None:
    for path in (ROLES_PATH / role / "vars").glob("*.yml"):
        for name in yaml.safe_load(path.read_text()) or {}:
            assert name.startswith(role + "_"), f"{path}: {name}"


def test_the_directory_the_role_makes_for_nccls_files_is_the_one_validate_allows() -> None:
    """NCCL_DEBUG_FILE and the like are refused outside one directory (toolkit/tuning/variables.py);
    the nccl_conf role makes that directory. Both are written out here, so a change to one fails."""
    from toolkit.tuning.variables import LOG_DIR

    defaults = yaml.safe_load((ROLES_PATH / "nccl_conf" / "defaults" / "main.yml").read_text())
    assert defaults["nccl_conf_log_dir"] == "/var/log/gpuctl/nccl"
    assert LOG_DIR == "/var/log/gpuctl/nccl"
