"""The lab's object store: an S3-compatible server (moto's server mode) for `kind: object` volumes.

It listens on the host's end of the lab's management bridge (`<host_mgmt_ip>:STORE_PORT`), so the
lab's nodes reach it and nothing else does: that network is neither routed nor NATed anywhere.

moto keeps its data in memory. So the store is a process of its own, started by `up` and left
running by `down` while any object volume is `keep_on_down` (the default): the next `up` finds it
with the same buckets and objects. Its listening socket stays bound while `down` removes the bridge
(Linux keeps a socket bound to an address that went away) and answers again once `up` has put the
same address back. Only `gpuctl down --delete-storage` empties it and stops it. A host reboot ends
it like any process: the lab's store is a test stand-in for OSS/COS, not a place for real data.

Its record (pid, address, buckets) lives in `$GPUCTL_HOME/lab-storage/<cluster>/`, outside the
cluster's directory, which `down` removes.

The key pair: moto checks no signature, yet s3fs will not start without a key pair. The lab hands
its nodes the fixed pair below. It is not a credential: it opens nothing but this store, which
accepts any pair, and it is the same on every machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from toolkit import hints
from toolkit.errors import ProviderError
from toolkit.files import FileError, log_tail, open_private, read_bounded, write_atomic
from toolkit.providers.base import ProgressCallback, VolumeOutput
from toolkit.providers.lab.state import MGMT_RANGE
from toolkit.spec.models import ClusterSpec, StorageVolume
from toolkit.state import check_cluster_name, gpuctl_home, home_dir, own_dir

STORE_PORT = 9000
# Not a credential (see the module's docstring): "<access key id>:<secret>" as s3fs's passwd file has it.
LAB_KEY_PAIR = "gpuctl-lab:not-a-credential"
# Sent on every request of gpuctl's own: moto refuses anonymous reads and deletes, and checks no signature.
_AUTHORIZATION = ("AWS4-HMAC-SHA256 Credential=gpuctl-lab/20260101/us-east-1/s3/aws4_request, "
                  "SignedHeaders=host, Signature=0")
_S3 = "{http://s3.amazonaws.com/doc/2006-03-01/}"
RECORD = "store.json"


class StoreRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cluster: str
    pid: int
    address: str  # the host's management address, bare
    port: int
    started_at: str


def store_dir(cluster: str) -> Path:
    """Outside the cluster's directory: `down` removes that one, the store outlives it."""
    return gpuctl_home() / "lab-storage" / check_cluster_name(cluster, where="lab object store")


def object_volumes(spec: ClusterSpec) -> list[StorageVolume]:
    return [volume for volume in spec.storage if volume.kind == "object"]


def endpoint(record: StoreRecord) -> str:
    return f"http://{record.address}:{record.port}"


def load(cluster: str, *, set_aside: bool = False, progress: ProgressCallback | None = None) -> StoreRecord | None:
    """The store's record, or None when there is none.

    A damaged record (unreadable, another schema, or naming what gpuctl's store of this cluster would
    not: `foreign_entries`) is refused; with `set_aside` (what `down` asks for) it is moved to the
    home's damaged/ folder, said so on `progress`, and the caller goes on as if there were none: a
    damaged record never blocks `down`, and nothing it names is acted on (the store's process is
    then found by what gpuctl derives itself: `orphan_processes`).
    """
    path = store_dir(cluster) / RECORD
    if not os.path.lexists(path):
        return None
    try:
        record = StoreRecord.model_validate_json(read_bounded(path, limit=64 * 1024, what="store record", follow=False))
        foreign = foreign_entries(record, cluster)
        if foreign:
            raise ValueError("names what gpuctl's store for this lab does not, so gpuctl acts on none of it: "
                             + "; ".join(foreign))
        return record
    except (ValueError, FileError) as exc:
        problem = str(exc).splitlines()[0][:300]
        if not set_aside:
            raise ProviderError(f"the lab object store record {path} is damaged: {problem}",
                                hint=f"`{hints.spec_command(cluster, 'down')} --delete-storage` stops the store "
                                "anyway and sets the record aside; its data is lost with it") from None
    kept = home_dir("damaged") / f"{cluster}-{time.strftime('%Y%m%dT%H%M%S')}-{RECORD}"
    path.replace(kept)  # a link is moved as the link, never followed
    if progress is not None:
        progress(f"object store: the record {path} is damaged ({problem}); set aside as {kept}")
    return None


def orphan_processes(cluster: str) -> list[int]:
    """The pids of this cluster's store found without its record: a moto server working in the
    cluster's own store directory (how gpuctl starts it, `ensure`), the only mark gpuctl trusts."""
    own = str(store_dir(cluster))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) < 2:
            continue
        try:
            if os.readlink(entry / "cwd") == own and b"moto.server" in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def foreign_entries(record: StoreRecord, cluster: str) -> list[str]:
    """Entries gpuctl's own store of `cluster` would not have: another cluster's name, an address that
    is not the host's end of a lab management network (10.213.<1-250>.1), another port, a pid no
    process of its own has. Its pid is checked again where it is used (`running`: the process must be
    this cluster's moto server, working in this cluster's store directory)."""
    found = []
    if record.cluster != cluster:
        found.append(f"cluster {record.cluster!r} (this store is {cluster}'s)")
    parts = record.address.split(".")
    if not (parts[:2] == MGMT_RANGE.split(".") and len(parts) == 4 and parts[3] == "1"
            and parts[2].isdigit() and str(int(parts[2])) == parts[2] and 1 <= int(parts[2]) <= 250):
        found.append(f"address {record.address!r} (gpuctl's store listens on {MGMT_RANGE}.<1-250>.1)")
    if record.port != STORE_PORT:
        found.append(f"port {record.port} (gpuctl's store listens on {STORE_PORT})")
    if record.pid < 2:  # os.kill reads 0 and -1 as "my process group" and "every process"
        found.append(f"pid {record.pid} (a process of its own has a pid above 1)")
    return found


def running(record: StoreRecord) -> bool:
    """Whether the recorded process is alive and is this cluster's store (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{record.pid}/cmdline").read_bytes().split(b"\0")
        cwd = os.readlink(f"/proc/{record.pid}/cwd")
    except OSError:
        return False
    return b"moto.server" in cmdline and cwd == str(store_dir(record.cluster))


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def ensure(spec: ClusterSpec, host_address: str, progress: ProgressCallback) -> StoreRecord:
    """The cluster's store, running on `host_address` with every object volume's bucket: reused when
    it runs already (a kept store after `down`), else started. Call it after the bridge has its address."""
    record = load(spec.name)
    if record is not None and running(record):
        if record.address != host_address:
            raise ProviderError(
                f"the lab object store of {spec.name} runs on {record.address}, but this lab's management network "
                f"now has {host_address} (another lab took its subnet while it was down)",
                hint=f"take the other lab down first, or empty the store with "
                f"`{hints.spec_command(spec.name, 'down')} --delete-storage` (its data is lost)")
        progress(f"object store: reusing the kept store at {endpoint(record)} (pid {record.pid})")
    else:
        record = _start(spec.name, host_address, progress)
    for volume in object_volumes(spec):
        bucket = volume.bucket_name(spec.name)
        if bucket not in list_buckets(record):
            _request(record, "PUT", f"/{bucket}")
            progress(f"object store: bucket {bucket} created for volume {volume.name}")
    return record


def _start(cluster: str, address: str, progress: ProgressCallback) -> StoreRecord:
    if _answers(address, STORE_PORT):
        # Not ours (no record of it): a store of a lab under another GPUCTL_HOME, or a stray one.
        raise ProviderError(f"something already listens on {address}:{STORE_PORT}, where the lab object store of "
                            f"{cluster} would run",
                            hint="find it with `ss -ltnp` (a lab store made under another GPUCTL_HOME is "
                            "stopped by its down with --delete-storage, run under that home)")
    directory = own_dir(store_dir(cluster))
    with os.fdopen(open_private(directory / "store.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
        # Its working directory marks the process as this cluster's store (see running()).
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", address, "-p", str(STORE_PORT)],
            cwd=directory, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            env=_plain_env(),
        )
    record = StoreRecord(cluster=cluster, pid=process.pid, address=address, port=STORE_PORT,
                         started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _answers(address, STORE_PORT):
            break
        if process.poll() is not None:
            tail = log_tail(directory / "store.log")
            raise ProviderError(f"the lab object store did not start on {address}:{STORE_PORT}: {tail}",
                                hint=f"is port {STORE_PORT} of {address} taken? (`ss -ltnp`)")
        time.sleep(0.1)
    else:
        process.kill()
        raise ProviderError(f"the lab object store did not answer on {address}:{STORE_PORT} within 30 s")
    _write(record)
    progress(f"object store: S3-compatible server (moto) started at {endpoint(record)}, pid {record.pid}")
    return record


def _plain_env() -> dict[str, str]:
    # No proxy settings and no cloud keys: the store talks to nobody and needs no credential.
    from toolkit.secrets import child_env

    env = child_env()
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(key, None)
    return env


def _write(record: StoreRecord) -> None:
    write_atomic(store_dir(record.cluster) / RECORD, record.model_dump_json(indent=2) + "\n")


def reachable(record: StoreRecord) -> bool:
    """Whether the store's address is this host's now (its lab's bridge is up). Without it, a
    request would leave through the default route to whatever else has that address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((record.address, 0))  # binding needs an address of this host
        except OSError:
            return False
    return True


def _request(record: StoreRecord, method: str, path: str, query: str = "") -> bytes:
    if not reachable(record):
        raise ProviderError(f"the lab object store's address {record.address} is not on this host now "
                            "(its lab's network is down); not sending anything there")
    url = f"{endpoint(record)}{path}" + (f"?{query}" if query else "")
    request = urllib.request.Request(url, method=method, headers={"Authorization": _AUTHORIZATION})
    # The store is on the lab's own network: never through a proxy from the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return bytes(response.read())
    except (urllib.error.URLError, OSError) as exc:
        raise ProviderError(f"the lab object store at {endpoint(record)} refused {method} {path}: {exc}") from exc


def list_buckets(record: StoreRecord) -> list[str]:
    root = ET.fromstring(_request(record, "GET", "/"))
    return [name.text or "" for name in root.iter(f"{_S3}Name")]


def bucket_usage(record: StoreRecord, bucket: str) -> tuple[int, int]:
    """(objects, bytes) in a bucket."""
    root = ET.fromstring(_request(record, "GET", f"/{bucket}", "list-type=2&max-keys=1000"))
    sizes = [int(size.text or 0) for size in root.iter(f"{_S3}Size")]
    return len(sizes), sum(sizes)


def _empty_and_delete(record: StoreRecord, bucket: str) -> None:
    while True:
        root = ET.fromstring(_request(record, "GET", f"/{bucket}", "list-type=2&max-keys=1000"))
        keys = [key.text or "" for key in root.iter(f"{_S3}Key")]
        if not keys:
            break
        for key in keys:
            _request(record, "DELETE", f"/{bucket}/{urllib.parse.quote(key)}")
    _request(record, "DELETE", f"/{bucket}")


def volume_outputs(spec: ClusterSpec, record: StoreRecord) -> list[VolumeOutput]:
    return [VolumeOutput(name=volume.name, kind="object", mount_path=volume.mount_path,
                         bucket=volume.bucket_name(spec.name), endpoint=endpoint(record),
                         lab_key_pair=LAB_KEY_PAIR)
            for volume in object_volumes(spec)]


def on_down(spec: ClusterSpec, progress: ProgressCallback) -> list[str]:
    """While the lab's network is still there (the store is reached over it): delete the buckets of
    volumes with keep_on_down false, keep the others, and stop the store when it holds nothing kept.
    Returns one line per kept bucket. After the network is gone, only what the record says is known."""
    record = load(spec.name, set_aside=True, progress=progress)
    if record is None:
        orphans = orphan_processes(spec.name)
        if not orphans:
            return []
        # Its record is gone: the buckets cannot be listed safely, so the store (and its data) is kept.
        return [f"kept the lab object store of {spec.name} (pid {', '.join(map(str, orphans))}), whose record was "
                f"damaged; `{hints.spec_command(spec.name, 'down')} --delete-storage` stops it"]
    if running(record) and not reachable(record):
        return [f"kept the lab object store at {endpoint(record)} (pid {record.pid}) with its buckets; "
                f"`{hints.spec_command(spec.name, 'down')} --delete-storage` removes it"]
    if not running(record):
        progress(f"object store: the store recorded at {endpoint(record)} is not running (host restarted?); "
                 "its data is gone")
        stop(spec.name)
        return []
    volumes = {volume.bucket_name(spec.name): volume for volume in object_volumes(spec)}
    kept: list[str] = []
    for bucket in list_buckets(record):
        volume = volumes.get(bucket)
        if volume is not None and not volume.keep_on_down:
            _empty_and_delete(record, bucket)
            progress(f"object store: bucket {bucket} deleted (volume {volume.name} has keep_on_down: false)")
            continue
        objects, size = bucket_usage(record, bucket)
        kept.append(f"kept bucket {bucket} ({objects} objects, {size} bytes) in the lab object store at "
                    f"{endpoint(record)}; `{hints.spec_command(spec.name, 'down')} --delete-storage` removes it")
    if not kept:
        stop(spec.name)
        progress("object store: nothing kept; stopped")
    return kept


def delete_storage(spec: ClusterSpec, progress: ProgressCallback) -> list[str]:
    """Empty and delete every bucket of the cluster's store, then stop it; the buckets removed."""
    record = load(spec.name, set_aside=True, progress=progress)
    if record is None:
        orphans = orphan_processes(spec.name)
        if not orphans and not store_dir(spec.name).is_dir():
            progress(f"object store: {spec.name} has none on this machine")
            return []
        stop(spec.name)
        progress(f"object store: stopped, and {store_dir(spec.name)} removed")
        return [f"every bucket of the store (pid {', '.join(map(str, orphans))})"] if orphans else []
    removed: list[str] = []
    if running(record) and not reachable(record):
        # The lab's network is gone, so the store cannot be asked; its data lives in its memory
        # only, and goes with the process.
        removed = [f"every bucket of the store at {endpoint(record)}"]
    elif running(record):
        for bucket in list_buckets(record):
            _empty_and_delete(record, bucket)
            removed.append(bucket)
            progress(f"object store: bucket {bucket} emptied and deleted")
        left = list_buckets(record)
        if left:
            raise ProviderError(f"the lab object store still has {', '.join(left)} after deleting them")
    stop(spec.name)
    progress(f"object store: stopped, and {store_dir(spec.name)} removed")
    return removed


def stop(cluster: str) -> None:
    """Stop the store's process (TERM, then KILL) and remove its record directory."""
    record = load(cluster, set_aside=True)
    pids = [record.pid] if record is not None and running(record) else orphan_processes(cluster)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and set(pids) & set(orphan_processes(cluster)):
            time.sleep(0.05)
        if not set(pids) & set(orphan_processes(cluster)):
            break
    directory = store_dir(cluster)
    for child in directory.glob("*"):
        child.unlink()
    with contextlib.suppress(FileNotFoundError):
        directory.rmdir()

