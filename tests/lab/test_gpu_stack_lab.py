"""A pool with gpu_stack image on a real lab node: the node replays an image that carries the
driver, CUDA and NCCL (the lab's stand-in, a package in the node's own dpkg database), and
configure finds and keeps each of them and installs nothing, over SSH, through the roles' own
find-and-keep tasks (the ones a cloud node runs)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.configure import configure
from toolkit.providers.base import ClusterOutputs
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.lab
NAME = "stacklab"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[tuple[ClusterSpec, ClusterOutputs]]:
    spec_file = tmp_path_factory.mktemp("spec") / f"{NAME}.yaml"
    spec_file.write_text(f"""\
name: {NAME}
provider: local
node_pools:
  - name: img
    instance_type: lab
    count: 1
    gpu_stack: image
    capture: {replay_bundle}
network: {{fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
""")
    spec = load_spec(spec_file)
    driver = LocalLabDriver()
    outputs = driver.up(spec, lambda _line: None)
    yield spec, outputs
    driver.down(spec, lambda _line: None)


def on_node(outputs: ClusterOutputs, command: str) -> subprocess.CompletedProcess[str]:
    node = outputs.nodes[0]
    return subprocess.run(
        ["ssh", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={outputs.known_hosts}",
         "-o", "BatchMode=yes", "-i", str(outputs.ssh_private_key), f"root@{node.ssh_host}", command],
        capture_output=True, text=True, timeout=60, check=False,
    )


def test_the_node_carries_a_stand_in_its_own_package_manager_knows(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    _, outputs = lab
    done = on_node(outputs, "dpkg-query -S /usr/bin/nvidia-smi; dpkg-query -W gpuctl-lab-standin-gpu-stack")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["gpuctl-lab-standin-gpu-stack: /usr/bin/nvidia-smi",
                                        "gpuctl-lab-standin-gpu-stack\t550.127.08"]


DPKG_LOG_LINES = "cat /var/log/dpkg.log 2>/dev/null | wc -l"


def test_configure_keeps_the_images_driver_cuda_and_nccl_and_installs_nothing(
        lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, outputs = lab
    before = on_node(outputs, DPKG_LOG_LINES)
    assert before.returncode == 0, before.stderr
    result = configure(spec, outputs, lambda _line: None)
    assert result.ok, [n.line() for n in result.nodes.values()]
    notes = result.nodes[f"{NAME}-img-0"].notes
    # The stand-in image carries older versions than the spec's default pins: each is kept as it is.
    not_applied = "the pool takes the image's stack (gpu_stack image), the pin {} is not applied; nothing installed."
    assert ("nvidia_driver: Note: kept the image's driver 550.127.08 (from gpuctl-lab-standin-gpu-stack: "
            "/usr/bin/nvidia-smi): " + not_applied.format("570.133.20")) in notes
    assert "cuda: Note: kept the image's CUDA 12.4 (/usr/local/cuda-12.4): " + not_applied.format("12.8") in notes
    assert "nccl: Note: kept the image's NCCL 2.21.5: " + not_applied.format("2.26.2") in notes
    # Nothing came from the package manager (dpkg logs every unpack and configure it does) and no
    # NVIDIA repository was added.
    after = on_node(outputs, DPKG_LOG_LINES + "; ls /etc/apt/sources.list.d")
    assert after.returncode == 0, after.stderr
    assert after.stdout.split()[0] == before.stdout.split()[0]
    assert "cuda-keyring.list" not in after.stdout


def test_plan_says_the_pool_takes_the_images_stack(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    from toolkit.catalog.checks import check_spec
    from toolkit.plan import build_plan

    spec, _ = lab
    plan = build_plan(spec, check_spec(spec, source="stacklab.yaml"))
    assert [(h.gpu_stack, h.gpu_stack_path) for h in plan.hardware] == [(
        "image", "the image's: lab nodes carry a stand-in of an image with driver 550.127.08, CUDA 12.4, NCCL 2.21.5 "
                 "(no GPU); configure finds and keeps it, installs nothing")]
