"""A baked lab image: one node of a pool configured and kept, then a cluster whose node starts from
it and skips the install roles because its install record holds.

Tests in this module share the image and run in file order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.configure import configure
from toolkit.errors import UsageError
from toolkit.images import build as image_build
from toolkit.images import store
from toolkit.providers.lab import images as lab_images
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.lab
IMAGE = "ci-n"


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[store.ImageRecord]:
    folder = tmp_path_factory.mktemp("spec")
    spec = load_spec(write_spec(folder, "citest", 1, replay_bundle))
    lines: list[str] = []
    record = image_build.build(spec, "n", IMAGE, LocalLabDriver(), lines.append)
    try:
        yield record
    finally:
        image_build.delete(IMAGE, lambda _line: None)


def test_the_image_holds_the_bake_nodes_install_record_and_nothing_of_the_node_itself(
    baked: store.ImageRecord,
) -> None:
    assert (baked.provider, baked.cluster, baked.pool, baked.instance_type) == ("local", "citest", "n", "lab")
    assert sorted(baked.stack) == ["inputs", "kernel", "nvidia", "packages", "version"]
    root = lab_images.image_root(IMAGE)
    written = dict(line.split("=", 1) for line in (root / "etc/gpuctl/install.env").read_text().splitlines())
    assert written == baked.stack
    for own in ("etc/ssh/ssh_host_ed25519_key", "etc/hostname", "root/.ssh/authorized_keys", "etc/nccl.conf"):
        assert not (root / own).exists(), own
    # The bake cluster is gone.
    assert not LocalLabDriver().exists(image_build.bake_spec(load_spec(write_spec(root.parent, "citest", 1,
                                                                                  Path("/nonexistent"))), "n", IMAGE))
    with pytest.raises(UsageError, match="an image named ci-n exists already"):
        image_build.build(load_spec(write_spec(root.parent, "citest", 1, Path("/nonexistent"))), "n", IMAGE,
                          LocalLabDriver(), lambda _line: None)


def test_a_node_of_the_baked_image_skips_the_install_roles_and_is_configured(
    baked: store.ImageRecord, tmp_path: Path, replay_bundle: Path,
) -> None:
    path = write_spec(tmp_path, "citest", 1, replay_bundle)
    path.write_text(path.read_text().replace("image: debian_12", f"image: baked:{IMAGE}"))
    spec = load_spec(path)
    driver = LocalLabDriver()
    outputs = driver.up(spec, lambda _line: None)
    try:
        with pytest.raises(UsageError, match="image ci-n is the root of the nodes of citest"):
            image_build.delete(IMAGE, lambda _line: None)
        result = configure(spec, outputs, lambda _line: None)
        node = result.nodes["citest-n-0"]
        assert node.ok, node.line()
        assert any("holds what the install roles would install" in note for note in node.notes), node.notes
        for role in ("cuda", "nccl", "rdma_userspace"):
            assert node.roles.get(role, "").startswith("skipped"), node.roles
        assert node.roles.get("mtu") in ("ok", "changed"), node.roles
        # --full runs every role, whatever the install record says.
        full = configure(spec, outputs, lambda _line: None, full=True)
        assert full.nodes["citest-n-0"].ok
        assert full.nodes["citest-n-0"].roles.get("rdma_userspace") in ("ok", "changed"), full.nodes["citest-n-0"].roles
    finally:
        driver.down(spec, lambda _line: None)
