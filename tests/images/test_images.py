"""Baked images without a lab: the records, the bake's failure paths (nothing is left behind), what
validate says about `image: baked:<name>`, and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolkit import hints
from toolkit.catalog.checks import check_spec
from toolkit.cli import main
from toolkit.configure.ansible_run import NodeResult, RunResult
from toolkit.errors import CheckFailed, ProviderError, SpecError, UsageError
from toolkit.images import build as image_build
from toolkit.images import store
from toolkit.providers.base import ClusterOutputs, NodeOutput
from toolkit.providers.lab import images as lab_images
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec, load_spec_text

LAB = Path(__file__).parents[2] / "examples" / "local-lab.yaml"
STACK = {"version": "1", "inputs": "a" * 64, "kernel": "6.1.0-18-amd64", "packages": "b" * 64, "nvidia": ""}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


class FakeLab(LocalLabDriver):
    """The lab driver with nothing made: records what the bake asked of it."""

    def __init__(self, *, exists: bool = False) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.existed = exists

    def exists(self, spec: Any) -> bool:
        return self.existed

    def up(self, spec: Any, progress: Any) -> ClusterOutputs:
        self.calls.append(f"up {spec.name} {[(p.name, p.count) for p in spec.node_pools]}")
        return ClusterOutputs(cluster=spec.name, provider="local", fabric="tcp", mtu=8500, nodes=[
            NodeOutput(name=f"{spec.name}-node-0", pool="node", instance_id="ns1", instance_type="lab",
                       private_ip="10.0.0.11", ssh_host="10.0.0.11")])

    def down(self, spec: Any, progress: Any, *, delete_storage: bool = False) -> bool:
        self.calls.append(f"down {spec.name}")
        return True

    def bake_image(self, spec: Any, name: str, progress: Any) -> tuple[str, str, str | None]:
        self.calls.append(f"bake {name}")
        root = store.image_dir(name) / "root"
        root.mkdir(parents=True)
        return "overlay", str(root), "debian12-0123456789"


def configured(ok: bool) -> Any:
    def configure(spec: Any, outputs: ClusterOutputs, progress: Any, *, full: bool = False) -> RunResult:
        assert full
        node = outputs.nodes[0].name
        return RunResult(nodes={node: NodeResult(node, ok=ok, failed_task=None if ok else "mtu: check",
                                                 message=None if ok else "ping failed")}, rc=0 if ok else 2)
    return configure


def test_a_bake_records_the_image_and_removes_its_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_build, "read_install_record", lambda outputs: dict(STACK))
    driver = FakeLab()
    record = image_build.build(load_spec(LAB), "node", "lab-node", driver, lambda _line: None,
                               configure=configured(True))
    assert driver.calls == ["up bake-lab-node [('node', 1)]", "bake lab-node", "down bake-lab-node"]
    assert (record.cluster, record.pool, record.instance_type, record.layout) == ("lab", "node", "lab", "overlay")
    assert record.stack == STACK
    again = store.load("lab-node")
    assert again == record
    assert json.loads(store.record_path("lab-node").read_text())["stack"]["kernel"] == "6.1.0-18-amd64"


def test_a_failed_bake_leaves_neither_image_nor_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    driver = FakeLab()
    with pytest.raises(CheckFailed, match=r"configure failed on the bake node \(bake-lab-node-node-0: mtu: check: "
                                          r"ping failed\)"):
        image_build.build(load_spec(LAB), "node", "lab-node", driver, lambda _line: None, configure=configured(False))
    assert driver.calls == ["up bake-lab-node [('node', 1)]", "down bake-lab-node"]
    assert store.names() == []

    def broken(outputs: Any) -> dict[str, str]:
        raise ProviderError("no install record")
    monkeypatch.setattr(image_build, "read_install_record", broken)
    with pytest.raises(ProviderError, match="no install record"):
        image_build.build(load_spec(LAB), "node", "lab-node", FakeLab(), lambda _line: None,
                          configure=configured(True))
    assert store.names() == []


def test_a_bake_is_refused_before_anything_is_made() -> None:
    driver = FakeLab()
    with pytest.raises(UsageError, match="--pool: lab has no pool named 'gpu'"):
        image_build.build(load_spec(LAB), "gpu", "lab-gpu", driver, lambda _line: None)
    with pytest.raises(UsageError, match="is not an image name"):
        image_build.build(load_spec(LAB), "node", "Lab_Node", driver, lambda _line: None)
    cloud = load_spec(Path(__file__).parents[2] / "examples" / "alicloud-erdma-2x8.yaml")
    with pytest.raises(ProviderError, match="baking on alicloud is not built yet"):
        image_build.build(cloud, cloud.node_pools[0].name, "ali", object(), lambda _line: None)  # type: ignore[arg-type]
    assert driver.calls == []


class BrokenCopy(FakeLab):
    """Copies part of the root, then fails: what a full disk does half-way through the copy."""

    def bake_image(self, spec: Any, name: str, progress: Any) -> tuple[str, str, str | None]:
        super().bake_image(spec, name, progress)
        (store.image_dir(name) / "root" / "usr").mkdir()
        raise ProviderError("copying the base root failed: No space left on device")


def test_a_bake_that_fails_while_copying_or_recording_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_build, "read_install_record", lambda outputs: dict(STACK))
    driver = BrokenCopy()
    with pytest.raises(ProviderError, match="No space left on device"):
        image_build.build(load_spec(LAB), "node", "lab-node", driver, lambda _line: None, configure=configured(True))
    assert driver.calls == ["up bake-lab-node [('node', 1)]", "bake lab-node", "down bake-lab-node"]
    assert not store.image_dir("lab-node").exists()

    def full_disk(record: Any) -> Path:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(store, "save", full_disk)
    with pytest.raises(OSError, match="No space left"):
        image_build.build(load_spec(LAB), "node", "lab-node", FakeLab(), lambda _line: None,
                          configure=configured(True))
    assert not store.image_dir("lab-node").exists()


def test_what_an_interrupted_bake_left_is_removed_before_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_build, "read_install_record", lambda outputs: dict(STACK))
    (store.image_dir("lab-node") / "root" / "etc").mkdir(parents=True)  # a copy killed half-way: no record
    lines: list[str] = []
    image_build.build(load_spec(LAB), "node", "lab-node", FakeLab(), lines.append, configure=configured(True))
    assert "image lab-node: removing what an interrupted bake left" in lines
    assert not (store.image_dir("lab-node") / "root" / "etc").exists()
    assert store.load("lab-node") is not None


def test_no_spec_may_take_the_name_of_a_bake_cluster() -> None:
    with pytest.raises(SpecError, match="names starting with 'bake-' are kept for gpuctl image build"):
        load_spec_text(LAB.read_text().replace("name: lab\n", "name: bake-lab\n", 1), source="s.yaml")


def test_stripping_the_node_own_files_never_follows_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "host"
    (victim / "keep").mkdir(parents=True)
    (victim / "secret").write_text("host file")
    layer = tmp_path / "layer"
    (layer / "etc" / "ssh").mkdir(parents=True)
    (layer / "etc" / "ssh" / "ssh_host_ed25519_key").write_text("node key")
    (layer / "etc" / "ssh" / "sshd_config").write_text("kept")
    (layer / "tmp").symlink_to(victim)  # root on the node made /tmp a link to the host's files
    (layer / "var").mkdir()
    (layer / "var" / "log").mkdir()
    (layer / "var" / "log" / "syslog").write_text("node log")
    (layer / "var" / "log" / "link").symlink_to(victim / "secret")
    for pattern in lab_images.NODE_OWN:
        lab_images.remove_own(layer, pattern)
    assert sorted(p.name for p in (layer / "etc" / "ssh").iterdir()) == ["sshd_config"]
    assert list((layer / "var" / "log").iterdir()) == []
    assert (victim / "secret").read_text() == "host file"
    assert (victim / "keep").is_dir()
    assert (layer / "tmp").is_symlink()


def test_a_lab_node_keeps_the_image_it_started_from(tmp_path: Path) -> None:
    from toolkit.providers.lab import state as lab_state

    spec = load_spec(LAB)
    planned = lab_state.plan(spec, set())
    planned.phase = "up"
    lab_state.save(planned)
    baked = load_spec_text(LAB.read_text().replace("image: debian_12", "image: baked:lab-node")
                           .replace("capture: captures/", f"capture: {LAB.parent}/captures/"), source="s.yaml")
    with pytest.raises(ProviderError, match=r"the spec changes the image its nodes started from: lab-node-0 "
                                            r"\(base -> lab-node\), lab-node-1 \(base -> lab-node\)"):
        LocalLabDriver()._plan_and_record(baked)
    assert lab_state.load("lab") is not None
    assert [node.image for node in lab_state.load("lab").nodes] == [None, None, None]  # type: ignore[union-attr]


def test_a_bake_cluster_left_by_an_interrupted_bake_is_removed_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_build, "read_install_record", lambda outputs: dict(STACK))
    driver = FakeLab(exists=True)
    image_build.build(load_spec(LAB), "node", "lab-node", driver, lambda _line: None, configure=configured(True))
    assert driver.calls == ["down bake-lab-node", "up bake-lab-node [('node', 1)]", "bake lab-node",
                            "down bake-lab-node"]


@pytest.mark.parametrize("name", ["", "-x", "x-", "A", "a_b", "a" * 28, "a/b", "a\nb", "..", "baked:x"])
def test_image_names_that_could_be_read_as_something_else_are_refused(name: str) -> None:
    with pytest.raises(UsageError):
        store.check_name(name)


def test_a_damaged_record_is_refused_listed_and_deletable(capsys: pytest.CaptureFixture[str]) -> None:
    store.image_dir("lab-node").mkdir(parents=True)
    store.record_path("lab-node").write_text('{"version": 1, "name": "lab-node"}')
    with pytest.raises(ProviderError, match="is not an image record gpuctl wrote"):
        store.load("lab-node")
    assert main(["image", "list"]) == 0
    assert "lab-node                    damaged:" in capsys.readouterr().out
    assert main(["image", "delete", "lab-node"]) == 0
    assert store.names() == []
    assert main(["image", "delete", "lab-node"]) == 2
    assert "no baked image named 'lab-node'" in capsys.readouterr().err


def spec_with(image: str, software: str = "") -> Any:
    text = LAB.read_text().replace("    image: debian_12\n", f"    image: {image}\n") + software
    # The capture is relative to the spec's own folder.
    text = text.replace("capture: captures/", f"capture: {LAB.parent}/captures/")
    return load_spec_text(text, source="baked.yaml")


def test_validate_names_a_baked_image_that_is_missing_and_warns_about_other_pins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problems = check_spec(spec_with("baked:lab-node")).problems
    # The command is the gpuctl that runs these tests (hints.command), its words written out here.
    command = hints.command("image", "build", "SPEC", "--pool", "POOL", "--name", "lab-node")
    assert problems == [f"<spec>: node_pools[0] (node).image: no baked image named lab-node here (make it with "
                        f"`{command}`)"]
    assert check_spec(spec_with("baked:Bad_Name")).problems[0].startswith(
        "<spec>: node_pools[0] (node).image: 'baked:Bad_Name': not an image name")
    monkeypatch.setattr(image_build, "read_install_record", lambda outputs: dict(STACK))
    image_build.build(load_spec(LAB), "node", "lab-node", FakeLab(), lambda _line: None, configure=configured(True))
    result = check_spec(spec_with("baked:lab-node"))
    assert (result.problems, result.warnings) == ([], [])
    other = check_spec(spec_with("baked:lab-node", "software:\n  cuda: '12.6'\n"))
    assert other.problems == []
    assert other.warnings == ["<spec>: node_pools[0] (node).image: image lab-node was baked with cuda 12.8 (this spec: "
                              "12.6): its nodes run the install roles again"]


def test_image_list_json_matches_its_schema(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    import jsonschema

    monkeypatch.setattr(image_build, "read_install_record", lambda outputs: dict(STACK))
    image_build.build(load_spec(LAB), "node", "lab-node", FakeLab(), lambda _line: None, configure=configured(True))
    store.image_dir("other").mkdir(parents=True)
    store.record_path("other").write_text("not json")
    assert main(["image", "list", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    schema = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "image.json").read_text())
    jsonschema.validate(document, schema)
    assert [(e["name"], e["record"] is None) for e in document["images"]] == [("lab-node", False), ("other", True)]
    assert document["images"][0]["record"]["stack"] == STACK
    assert document["images"][1]["problem"].endswith("is not an image record gpuctl wrote (1 problems)")


@pytest.mark.parametrize(("module", "id_form"), [("alicloud", "m-..."), ("tencentcloud", "img-...")])
def test_a_cloud_pool_with_a_baked_image_is_refused_with_what_to_do_instead(module: str, id_form: str) -> None:
    import importlib

    from toolkit.errors import CatalogError

    args = importlib.import_module(f"toolkit.providers.{module}.args")
    with pytest.raises(CatalogError) as refused:
        args.image_ref("baked:lab-node")
    assert refused.value.problems == ["image 'baked:lab-node': baked images are made in the local lab only so far"]
    assert f"give its id ({id_form})" in (refused.value.hint or "")
    assert "without a lifecycle agent" in (refused.value.hint or "")
