"""The installed ansible-core can drive every OS gpuctl configures (toolkit/configure/targets.py).

ansible-core says its minimum target Python in `module_utils/basic.py`: 2.16 as `_PY3_MIN =
sys.version_info >= (3, 6)` (with 2.7), 2.17 onwards as `_PY_MIN = (3, 7)` / `(3, 8)`. Read from
the installed copy, so a dependency bump that drops a catalog OS fails here, not on a paid node.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from toolkit.configure.targets import TARGETS
from toolkit.spec.models import NodePool

pytestmark = pytest.mark.unit


def minimum_target_python(basic: str) -> tuple[int, int]:
    """ansible-core's minimum Python 3 on the managed node, as its basic.py states it."""
    found = re.search(r"^_PY_MIN = \((\d+), (\d+)\)", basic, re.M) or re.search(
        r"^_PY3_MIN = sys\.version_info >= \((\d+), (\d+)\)", basic, re.M)
    assert found, "ansible-core's basic.py no longer states its minimum target Python where gpuctl reads it"
    return int(found.group(1)), int(found.group(2))


def test_the_minimum_is_read_the_way_each_line_writes_it() -> None:
    # The forms of ansible/ansible stable-2.16 and stable-2.18 basic.py:12, written out.
    assert minimum_target_python("_PY3_MIN = sys.version_info >= (3, 6)\n_PY2_MIN = (2, 7) <= sys.version_info"
                                 " < (3,)\n_PY_MIN = _PY3_MIN or _PY2_MIN\n") == (3, 6)
    assert minimum_target_python("_PY_MIN = (3, 8)\n") == (3, 8)


def test_the_installed_ansible_core_drives_every_os_gpuctl_configures() -> None:
    spec = importlib.util.find_spec("ansible")
    assert spec is not None, "ansible-core is not installed"
    assert spec.origin is not None
    basic = (Path(spec.origin).parent / "module_utils" / "basic.py").read_text()
    minimum = minimum_target_python(basic)
    too_old = [f"{t.os} (Python {t.python[0]}.{t.python[1]})" for t in TARGETS if t.python < minimum]
    assert not too_old, (f"the installed ansible-core needs Python {minimum[0]}.{minimum[1]} on the node, which "
                         f"{', '.join(too_old)} do not have: its dnf module cannot run there")


def test_every_image_alias_the_spec_names_has_its_target() -> None:
    # The aliases NodePool.image documents, written out.
    assert {t.image for t in TARGETS} == {"ubuntu_22_04", "ubuntu_24_04", "alinux_3", "tencentos_3", "debian_12"}
    assert NodePool.model_fields["image"].default == "ubuntu_22_04"
    assert all(t.sources for t in TARGETS)
