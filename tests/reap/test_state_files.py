"""Stack state that gpuctl did not write the way it reads it: a note on the cluster, never an internal error
(issue 20, item 9): integers too long to convert, items of the wrong type, times from year 9999, a
gzip bomb, nesting too deep to parse. Read by `reap` (no cloud asked: --provider with no credentials)
and by `cost` through a driver that reports what the checkpoint holds."""

from __future__ import annotations

import gzip
import json
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.reap.conftest import REPO, write_stack
from toolkit.cli import main
from toolkit.reap import local

pytestmark = pytest.mark.unit

SPEC = REPO / "examples" / "tencentcloud-hcc-2x8.yaml"


def checkpoint_of(home: Path, name: str = "old-hcc") -> Path:
    return home / "clusters" / name / "pulumi" / ".pulumi" / "stacks" / "gpuctl-tencentcloud" / f"{name}.json"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    write_stack(home, "old-hcc", "tencentcloud", "ap-shanghai", "aaaaaaaaaaaa", created="2026-01-01T00:00:00Z",
                expires="2026-01-01T08:00:00Z", types=["GT4.4XLARGE96"])
    return home


def scanned(home: Path) -> local.StateCluster:
    [cluster] = local.scan(home, env={})
    return cluster


def test_a_config_integer_too_long_to_convert_is_a_note(state: Path) -> None:
    config = state / "clusters" / "old-hcc" / "pulumi-project" / "Pulumi.old-hcc.yaml"
    config.write_text("config:\n  tencentcloud:region: ap-shanghai\n  gpuctl:clusterId: " + "7" * 5000 + "\n")
    cluster = scanned(state)
    assert (cluster.provider, cluster.notes) == ("unknown", (f"{config}: cannot be read (ValueError)",))


@pytest.mark.parametrize("document", [
    {"checkpoint": "x"},
    {"checkpoint": {"latest": ["not", "an", "object"]}},
    {"checkpoint": {"latest": {"resources": [1, "x", None, {"type": "pulumi:pulumi:Stack", "outputs": "x"},
                                             {"type": "x:index/instance:Instance", "outputs": "tags"}]}}},
])
def test_a_checkpoint_of_the_wrong_shape_reads_as_what_it_holds(document: dict[str, Any], state: Path) -> None:
    checkpoint_of(state).write_text(json.dumps(document))
    cluster = scanned(state)
    assert (cluster.provider, cluster.region, cluster.expires_at, cluster.instance_types) == \
        ("tencentcloud", "ap-shanghai", None, ())


def test_resources_that_are_not_a_list_are_said_not_guessed(state: Path) -> None:
    path = checkpoint_of(state)
    path.write_text(json.dumps({"checkpoint": {"latest": {"resources": {"a": 1}}}}))
    cluster = scanned(state)
    assert (cluster.resources, cluster.notes) == (None, (f"{path}: its resources are not a list; not read",))


@pytest.mark.parametrize("created", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_a_creation_time_no_run_can_have_is_unknown(created: str, state: Path) -> None:
    config = state / "clusters" / "old-hcc" / "pulumi-project" / "Pulumi.old-hcc.yaml"
    config.write_text(config.read_text().replace("2026-01-01T00:00:00Z", created))
    assert scanned(state).created_at is None


def test_a_gzip_bomb_checkpoint_stops_at_the_bound(state: Path) -> None:
    # About 3 MB that inflates to 3 GiB: 3,072 copies of one fully flushed deflate block of 1 MiB of zeros.
    path = checkpoint_of(state)
    path.unlink()
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = block.compress(b"\0" * (1 << 20)) + block.flush(zlib.Z_FULL_FLUSH)
    body = piece * 3072 + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    bomb = path.with_name("old-hcc.json.gz")
    bomb.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body + b"\0" * 8)
    assert bomb.stat().st_size < 4 * 1024 * 1024
    cluster = scanned(state)
    assert cluster.notes == (f"{bomb}: inflates to more than 256.0 MiB, more than gpuctl reads for a Pulumi "
                             "checkpoint",)
    assert (cluster.expires_at, cluster.resources) == (None, None)


def test_a_small_real_gzip_checkpoint_is_read(state: Path) -> None:
    path = checkpoint_of(state)
    path.with_name("old-hcc.json.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    assert scanned(state).expires_at == datetime(2026, 1, 1, 8, tzinfo=UTC)


def test_nesting_too_deep_to_parse_is_a_note(state: Path) -> None:
    path = checkpoint_of(state)
    path.write_text('{"checkpoint": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert scanned(state).notes == (f"{path}: cannot be read (RecursionError)",)


# --- cost of a cluster whose provider reports impossible times ------------------------------------


@pytest.mark.parametrize("created", ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-14:00", "+1e308", "-1"])
def test_cost_with_a_creation_time_no_run_can_have_says_unknown(
        created: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from toolkit.providers import registry

    class Driver:
        name = "tencentcloud"

        def status(self, spec: Any) -> dict[str, object]:
            return {"exists": True, "created_at": created, "expires_at": None}

    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(registry, "get_driver", lambda provider, backend_url=None: Driver())
    assert main(["cost", "--json", str(SPEC)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["created_at"], document["expires_at"], document["spent"]["amount"]) == (None, None, None)


def test_reap_of_hostile_state_exits_clean(state: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = state / "clusters" / "old-hcc" / "pulumi-project" / "Pulumi.old-hcc.yaml"
    config.write_text(config.read_text().replace("2026-01-01T00:00:00Z", "9999-12-31T23:59:59Z"))
    checkpoint_of(state).write_text(json.dumps({"checkpoint": {"latest": {"resources": [
        {"type": "pulumi:pulumi:Stack", "outputs": {"expiresAt": 1e308, "nodes": [{"instance_type": 10**30}]}}]}}}))
    for name in ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TENCENTCLOUD_SHARED_CREDENTIALS_DIR", str(state / "no-tccli"))
    monkeypatch.setenv("GPUCTL_HOME", str(state))
    assert main(["reap", "--json", "--provider", "tencentcloud"]) == 7  # no credentials: the state is listed
    [row] = json.loads(capsys.readouterr().out)["clusters"]
    assert (row["cluster"], row["status"], row["created_at"], row["expires_at"]) == ("old-hcc", "unknown", None, None)
