"""Tencent's TCCL (issue 21, item 16): the conflicting plugin removed first, the build for the node's
Ubuntu release, offered only on the families Tencent documents TCCL for.

"TCCL 使用说明" (https://cloud.tencent.com/document/product/1573/93190) and "GPU 型实例安装 TCCL"
(https://cloud.tencent.com/document/product/1646/93319), read 2026-12-01: create "GPU 型 HCCPNV4sne 或 GPU
型 HCCPNV4sn" instances; "以 Ubuntu 20.04 为例 ... # 卸载已有tccl版本和nccl插件 dpkg -r tccl && dpkg -r
nccl-rdma-sharp-plugins ... wget .../TCCL_1.5-ubuntu.20.04.5_amd64.deb && dpkg -i ...".
The selection runs for real with ansible-playbook on localhost (nothing is installed: the facts are given).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.catalog.test_tencent_names import check, spec_text
from tests.playbooks.test_roles_rails import run_play
from toolkit.paths import ROLES_PATH

pytestmark = pytest.mark.unit
SHA = "a" * 64
TCCL_20_04 = "https://taco-1251783334.cos.ap-shanghai.myqcloud.com/tccl/TCCL_1.5-ubuntu.20.04.5_amd64.deb"


def select(tmp_path: Path, **facts: Any) -> tuple[int, str]:
    play: dict[str, Any] = {
        "roles": [],
        "tasks": [
            {"name": "Select", "ansible.builtin.include_role": {"name": "nccl", "tasks_from": "tccl_select.yml"}},
            {"name": "Show", "ansible.builtin.debug": {"msg": "CHOSEN {{ nccl_tccl_package.url }}"}},
        ],
    }
    extra = {"ansible_os_family": "Debian", "ansible_distribution": "Ubuntu", "ansible_distribution_version": "20.04",
             **facts}
    return run_play(tmp_path, play, extra)


def test_the_build_for_the_nodes_ubuntu_release_is_chosen(tmp_path: Path) -> None:
    code, out = select(tmp_path, nccl_tccl_package_sha256=SHA)
    assert code == 0, out
    assert f"CHOSEN {TCCL_20_04}" in out


def test_a_release_tencent_publishes_no_build_for_is_refused_naming_the_ones_it_does(tmp_path: Path) -> None:
    code, out = select(tmp_path, nccl_tccl_package_sha256=SHA, ansible_distribution_version="22.04")
    assert code != 0
    assert "Tencent publishes a TCCL build for Ubuntu 20.04 only" in out
    assert "this node runs Ubuntu 22.04" in out
    assert "CHOSEN" not in out


def test_no_sha256_no_download(tmp_path: Path) -> None:
    code, out = select(tmp_path)
    assert code != 0
    # The default callback prints the message as JSON (quotes escaped) or as text, by ansible-core version.
    assert 'nccl_tccl_packages["20.04"].sha256 is not a SHA-256' in out.replace('\\"', '"')


def test_the_conflicting_plugin_is_removed_before_tccl_is_downloaded_and_installed() -> None:
    tasks = yaml.safe_load((ROLES_PATH / "nccl" / "tasks" / "tccl.yml").read_text())
    names = [task["name"] for task in tasks]
    remove = names.index("Remove the NCCL plugin packages that conflict with TCCL")
    assert names.index("Choose and check the TCCL build for this node") < remove
    assert remove < names.index("Download Tencent's TCCL package and check it against the operator's SHA-256")
    assert remove < names.index("Install the TCCL package with apt")
    assert tasks[remove]["ansible.builtin.apt"] == {"name": "{{ nccl_tccl_conflicts }}", "state": "absent"}
    defaults = yaml.safe_load((ROLES_PATH / "nccl" / "defaults" / "main.yml").read_text())
    assert defaults["nccl_tccl_conflicts"] == ["nccl-rdma-sharp-plugins"]
    assert defaults["nccl_tccl_packages"]["20.04"]["url"] == TCCL_20_04


def test_validate_offers_tccl_only_on_the_families_tencent_documents() -> None:
    tccl = spec_text("HCCG5v.24XLARGE384", zone="ap-shanghai-5", fabric="rdma").replace(
        "network:", "software: {tccl: true}\nnetwork:")
    problems, _ = check(tccl)
    assert problems == [
        "s.yaml: software.tccl: node_pools[0] (gpu) is HCCG5v.24XLARGE384; Tencent documents TCCL for HCCPNV4sne and "
        "HCCPNV4sn instances only (https://cloud.tencent.com/document/product/1646/93319); remove software.tccl or "
        "use one of them"]


def test_the_inventory_asks_the_role_for_tccl_only_when_the_spec_does() -> None:
    from toolkit.providers.tencentcloud.provider import TCCL_FAMILIES

    assert TCCL_FAMILIES == ("HCCPNV4sne", "HCCPNV4sn")
    defaults = yaml.safe_load((ROLES_PATH / "nccl" / "defaults" / "main.yml").read_text())
    assert defaults["nccl_tccl_install"] == "{{ gpuctl_tccl | default(false) }}"


def test_tccl_on_another_cloud_is_refused() -> None:
    from toolkit.catalog.checks import check_spec
    from toolkit.spec import load_spec_text

    repo = ROLES_PATH.parents[1]
    text = (repo / "examples" / "alicloud-erdma-2x8.yaml").read_text().replace(
        "ssh/example_ecdsa.pub", str(repo / "examples" / "ssh" / "example_ecdsa.pub")) + "software: {tccl: true}\n"
    result = check_spec(load_spec_text(text), source="a.yaml")
    assert ("a.yaml: software.tccl: TCCL is Tencent Cloud's library for its HCC network; provider alicloud cannot "
            "use it: remove software.tccl") in result.problems
