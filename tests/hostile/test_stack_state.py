"""Hostile-input corpus: the stack state gpuctl reads back, through reap and cost.

Generated contents for a cloud cluster's two files under the gpuctl home: the stack config
(`clusters/<name>/pulumi-project/Pulumi.<name>.yaml`) and the checkpoint of Pulumi's file backend
(`clusters/<name>/pulumi/.pulumi/stacks/<project>/<name>.json`, or `.json.gz`): not YAML / JSON /
gzip, nesting 100,000 deep, integers too long to convert, 1e308, NaN, times from year 9999 or with
no zone, every level of the wrong type, a gzip bomb, files past the size cap, a FIFO, a symlink, a
directory. Each runs through the real CLI (`run_case`): `reap` (a dry run) and `reap --yes
--include-orphaned` against the fake Tencent API on loopback (no real cloud), and `cost` of the
cluster's spec through a driver that reports the checkpoint's outputs as the Automation API would
(or fails as Pulumi would on a file it cannot read). Beside the hostile cluster lies a healthy live
one, which must still be listed: one bad state never hides the others.

Counted: internal errors, hangs, leaks; actions: a `down` of a cluster whose state does not say
(readably) that it expired (its node's own tag says live), and a release of an instance that is
not gpuctl's and past its own expiry tag. The checkpoint cap is lowered for the corpus only
(`local.MAX_CHECKPOINT_BYTES`, 4 MiB) so that its bomb and oversized file stay fast;
tests/reap/test_state_files.py runs the bomb against the production cap.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud import tencent
from tests.hostile.harness import CANARIES, run_case, tally
from tests.hostile.test_cloud_answers import may_release, released_ids, tags_of
from tests.reap.conftest import REPO, gpuctl_tags, tencent_instance, write_stack
from tests.reap.test_cost import gt4_spec
from toolkit.errors import ProviderError

pytestmark = pytest.mark.fake_cloud

SURFACE = "stack state files"
NAME, LIVE_NAME = "old-hcc", "live-one"
PROJECT = "gpuctl-tencentcloud"
DROP = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "GPUCTL_PULUMI_BACKEND",
        "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "TENCENTCLOUD_SECURITY_TOKEN")
CAP = 4 * 1024 * 1024
EXPIRED, LIVE = "2026-01-01T08:00:00Z", "2099-01-01T00:00:00Z"
DEEP = "[" * 100_000 + "]" * 100_000
SPEC = gt4_spec(NAME)


def root(outputs: Any) -> dict[str, Any]:
    return {"urn": f"urn:pulumi:{NAME}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{NAME}", "custom": False,
            "type": "pulumi:pulumi:Stack", "outputs": outputs}


def checkpoint(resources: Any = None, *, outputs: Any = None, latest: Any = None, top: Any = None) -> str:
    if top is not None:
        return json.dumps(top)
    if latest is None:
        if resources is None:
            resources = [root(outputs if outputs is not None else {"cluster": NAME, "expiresAt": EXPIRED,
                                                                     "createdAt": "2026-01-01T00:00:00Z",
                                                                     "nodes": [{"instance_type": "GT4.4XLARGE96"}]})]
        latest = {"resources": resources}
    return json.dumps({"version": 3, "checkpoint": {"stack": f"organization/{PROJECT}/{NAME}", "latest": latest}})


def config(**values: Any) -> str:
    body = {"tencentcloud:region": "ap-shanghai", "gpuctl:clusterId": "aaaaaaaaaaaa",
            "gpuctl:createdAt": "2026-01-01T00:00:00Z", "gpuctl:owner": "infra-team", **values}
    return "config:\n" + "".join(f"  {key}: {json.dumps(value)}\n" for key, value in body.items())


def bomb(size: int) -> bytes:
    """A gzip file of about size/1,000 bytes that inflates to `size` bytes of zeros."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = block.compress(b"\0" * (1 << 20)) + block.flush(zlib.Z_FULL_FLUSH)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + piece * (size >> 20) + b"\x03\x00" + b"\0" * 8


Writer = Callable[[Path], None]


def text(value: str | bytes) -> Writer:
    def write(path: Path) -> None:
        path.write_bytes(value if isinstance(value, bytes) else value.encode("utf-8"))
    return write


def sized(value: str, size: int) -> Writer:
    """`value` in a file of `size` bytes (sparse: the rest reads as NUL bytes, and costs no disk)."""
    def write(path: Path) -> None:
        path.write_text(value)
        os.truncate(path, size)
    return write


def fifo(path: Path) -> None:
    os.mkfifo(path)


def symlink(value: str) -> Writer:
    def make(path: Path) -> None:
        target = path.parent / "elsewhere"
        target.write_text(value)
        path.symlink_to(target)
    return make


def directory(path: Path) -> None:
    path.mkdir()


@dataclass(frozen=True)
class Case:
    label: str
    config: Writer | None = None  # None: the healthy one
    checkpoint: Writer | None = None
    gz: bool = False  # the checkpoint as <name>.json.gz
    may_down: bool = False  # the state still says, readably, that the cluster expired


def cases() -> list[Case]:
    found = [Case("healthy", may_down=True)]
    for label, body in (
        ("config not YAML", "config: [unclosed\n  - : :"),
        ("config nested 100,000 deep", "config: " + DEEP),
        ("config integer of 5,000 digits", "config:\n  gpuctl:clusterId: " + "7" * 5000 + "\n"),
        ("config is a list", "- a\n- b\n"), ("config is null", "null\n"), ("config: a string", "config: x\n"),
        ("config not UTF-8", b"config:\n  tencentcloud:region: \xff\xfe\n"),
        ("config with a python tag", "config: !!python/object/apply:os.system [echo hi]\n"),
        ("config alias bomb", "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 9)}]\n" for n in range(8))
         + "config: *i\n"),
        ("config region a list", config(**{"tencentcloud:region": ["ap-shanghai"]})),
        ("config region 1e308", config(**{"tencentcloud:region": 1e308})),
        ("config created in 9999", config(**{"gpuctl:createdAt": "9999-12-31T23:59:59Z"})),
        ("config created as a number", config(**{"gpuctl:createdAt": 1767225600})),
    ):
        readable = label in ("config created in 9999", "config created as a number", "config region 1e308")
        found.append(Case(label, config=text(body), may_down=readable))
    found += [Case("config 2 MiB", config=sized(config(), 2 * 1024 * 1024)), Case("config a FIFO", config=fifo),
              Case("config a symlink", config=symlink(config())),
              Case("config a directory", config=directory)]
    for label, body in (
        ("checkpoint not JSON", "{\"checkpoint\": "),
        ("checkpoint nested 100,000 deep", '{"checkpoint": ' + DEEP + "}"),
        ("checkpoint integer of 5,000 digits", '{"version": ' + "9" * 5000 + "}"),
        ("checkpoint is a string", checkpoint(top="x")),
        ("checkpoint.checkpoint a string", checkpoint(top={"checkpoint": "x"})),
        ("latest a list", checkpoint(latest=[1, 2])),
        ("resources an object", checkpoint({"a": 1})),
        ("resources of every type", checkpoint([1, "x", None, [], {"type": 7}, {"type": "pulumi:pulumi:Stack"}])),
        ("outputs a string", checkpoint(outputs="x")),
        ("expiresAt in 9999", checkpoint(outputs={"expiresAt": "9999-12-31T23:59:59Z"})),
        ("expiresAt 1e308", checkpoint(outputs={"expiresAt": 1e308})),
        ("expiresAt NaN", checkpoint(outputs={"expiresAt": "NaN"})),
        ("expiresAt without a zone", checkpoint(outputs={"expiresAt": "2026-01-01T08:00:00"})),
        ("expiresAt in year 1", checkpoint(outputs={"expiresAt": "0001-01-01T00:00:00Z"})),
        ("createdAt in 9999", checkpoint(outputs={"expiresAt": EXPIRED, "createdAt": "9999-12-31T23:59:59Z"})),
        ("nodes of the wrong types", checkpoint(outputs={"expiresAt": EXPIRED, "nodes": [1, None, {"instance_type":
                                                                                                  10**30}]})),
        ("nodes a string", checkpoint(outputs={"expiresAt": EXPIRED, "nodes": "GT4.4XLARGE96"})),
        ("100,000 resources", checkpoint([root({"expiresAt": LIVE})] + [
            {"type": "x:index/instance:Instance", "urn": f"u::{n}", "custom": True} for n in range(100_000)])),
    ):
        readable = label in ("createdAt in 9999", "nodes of the wrong types", "nodes a string")
        found.append(Case(label, checkpoint=text(body), may_down=readable))
    found += [
        Case("5 MiB, past the cap", checkpoint=sized(checkpoint(), 5 * 1024 * 1024)),
        Case("checkpoint a FIFO", checkpoint=fifo), Case("checkpoint a directory", checkpoint=directory),
        Case("checkpoint a symlink", checkpoint=symlink(checkpoint()), may_down=True),  # Pulumi's own dir: followed
        Case("gzip bomb", checkpoint=text(bomb(64 << 20)), gz=True),
        Case("not gzip", checkpoint=text(b"\x1f\x8b\x08garbage"), gz=True),
        Case("truncated gzip", checkpoint=text(gzip.compress(checkpoint().encode())[:40]), gz=True),
        Case("gzip of deep nesting", checkpoint=text(gzip.compress(('{"a": ' + DEEP + "}").encode())), gz=True),
        Case("gzip of a 9999 expiry", checkpoint=text(gzip.compress(checkpoint(
            outputs={"expiresAt": "9999-12-31T23:59:59Z"}).encode())), gz=True),
    ]
    return found


def home_for(root_dir: Path, case: Case) -> Path:
    home = root_dir / "home"
    folder = write_stack(home, NAME, "tencentcloud", "ap-shanghai", "aaaaaaaaaaaa", created="2026-01-01T00:00:00Z",
                         expires=EXPIRED, types=["GT4.4XLARGE96"])
    write_stack(home, LIVE_NAME, "tencentcloud", "ap-guangzhou", "bbbbbbbbbbbb", created="2026-01-01T00:00:00Z",
                expires=LIVE, types=["GT4.4XLARGE96"])
    if case.config is not None:
        path = folder / "pulumi-project" / f"Pulumi.{NAME}.yaml"
        path.unlink()
        case.config(path)
    if case.checkpoint is not None:
        path = folder / "pulumi" / ".pulumi" / "stacks" / PROJECT / f"{NAME}.json"
        path.unlink()
        case.checkpoint(path.with_name(f"{NAME}.json.gz") if case.gz else path)
    (root_dir / "spec.yaml").write_text(SPEC)
    return home


class Recorder:
    """The provider driver: `down` recorded (no Pulumi runs), `status` from the checkpoint as the
    Automation API's stack.outputs() gives it (Pulumi fails on a file it cannot read)."""

    def __init__(self) -> None:
        self.downs: list[str] = []
        self.home: Path | None = None

    def __call__(self, provider: str, backend_url: str | None = None) -> Recorder:
        return self

    name = "tencentcloud"

    def down(self, spec: Any, progress: Callable[[str], None], *, delete_storage: bool = False) -> bool:
        self.downs.append(spec.name)
        return True

    def status(self, spec: Any) -> dict[str, object]:
        assert self.home is not None
        stacks = self.home / "clusters" / spec.name / "pulumi" / ".pulumi" / "stacks" / PROJECT
        try:
            path = next(p for p in (stacks / f"{spec.name}.json", stacks / f"{spec.name}.json.gz") if p.exists())
            if not path.is_file() or path.stat().st_size > CAP:
                raise ValueError("not a checkpoint")
            raw = path.read_bytes()
            if path.suffix == ".gz":
                raw = zlib.decompressobj(wbits=31).decompress(raw, CAP)
            data = json.loads(raw)
            resources = data["checkpoint"]["latest"]["resources"]
            outputs = next(r["outputs"] for r in resources if r.get("type") == "pulumi:pulumi:Stack")
            values = dict(outputs)
        except (StopIteration, ValueError, KeyError, TypeError, AttributeError, RecursionError, OSError,
                zlib.error) as exc:
            raise ProviderError(f"pulumi: the stack's state cannot be read ({type(exc).__name__})") from None
        return {"cluster": spec.name, "provider": "tencentcloud", "exists": True, "nodes": values.get("nodes"),
                "expires_at": values.get("expiresAt"), "created_at": values.get("createdAt")}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[tencent.FakeTencentCloud, str]]:
    from toolkit.providers import cloud_api
    from toolkit.reap import local

    monkeypatch.setattr(cloud_api, "LIMITS", cloud_api.Limits(timeout_s=0.5, retry=cloud_api.RetryPolicy(tries=1),
                                                              deadline_s=3.0))
    monkeypatch.setattr(local, "MAX_CHECKPOINT_BYTES", CAP)
    monkeypatch.chdir(REPO)
    cloud = tencent.FakeTencentCloud(keys={CANARIES["TENCENTCLOUD_SECRET_ID"]: CANARIES["TENCENTCLOUD_SECRET_KEY"]},
                                     regional=True, regions=["ap-guangzhou", "ap-shanghai"])
    with tencent.serve(cloud) as url:
        yield cloud, url


def instances() -> list[dict[str, Any]]:
    # The hostile cluster's node is tagged live: only its state can say it expired, so a state that
    # cannot be read never leads to a `down`.
    return [tencent_instance("ins-old0", "ap-shanghai-5", gpuctl_tags(NAME, "aaaaaaaaaaaa", LIVE)),
            tencent_instance("ins-live0", "ap-guangzhou-3", gpuctl_tags(LIVE_NAME, "bbbbbbbbbbbb", LIVE))]


def test_stack_state_corpus(fake: tuple[tencent.FakeTencentCloud, str], monkeypatch: pytest.MonkeyPatch,
                            tmp_path: Path) -> None:
    from toolkit.providers import registry

    cloud, url = fake
    driver = Recorder()
    monkeypatch.setattr(registry, "get_driver", driver)
    record = tally(SURFACE)
    broken: list[str] = []
    env = {"GPUCTL_TENCENTCLOUD_ENDPOINT": url}
    number = 0
    before = {i["InstanceId"]: tags_of(i) for i in instances()}
    for case in cases():
        for command in ("reap", "reap --yes --include-orphaned", "cost"):
            if case.label == "gzip bomb" and command != "reap":
                continue  # one inflation to the cap is enough; the unit test runs the production cap
            number += 1
            folder = tmp_path / f"case{number}"
            home = home_for(folder, case)
            driver.home, driver.downs = home, []
            with cloud.lock:
                cloud.instances, cloud.calls = instances(), []
            argv = {"reap": ["reap", "--json", "--provider", "tencentcloud"],
                    "reap --yes --include-orphaned": ["reap", "--json", "--provider", "tencentcloud", "--yes",
                                                      "--include-orphaned"],
                    "cost": ["cost", "--json", str(folder / "spec.yaml")]}[command]
            now = datetime.now(UTC)
            outcome = run_case(f"{case.label} / {command}", argv, home=home, env=env, drop=DROP, timeout=8.0)
            actions = [f"down of {name}" for name in driver.downs if name != NAME or not case.may_down]
            actions += [f"TerminateInstances of {id_}" for call in cloud.calls if call.action == "TerminateInstances"
                        for id_ in released_ids("tencentcloud", call) if not may_release(before.get(id_, {}), now)]
            record.record(outcome, actions=actions)
            if command.startswith("reap") and outcome.out.startswith("{"):
                rows = {row["cluster"]: row for row in json.loads(outcome.out)["clusters"]}
                if rows.get(LIVE_NAME, {}).get("status") != "live":
                    broken.append(f"{case.label} / {command}: the healthy live cluster is not listed as live")
            if outcome.code not in (0, 6):
                broken.append(f"{case.label} / {command}: exit {outcome.code}")
    record.assert_clean(minimum=120)
    assert broken == [], "\n".join(broken)
