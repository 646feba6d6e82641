"""The lab's Debian 12 base root: made once with debootstrap, cached, shared read-only by nodes.

The cache key is a hash of the recipe (suite, variant, package list), so changing the recipe
builds a new base instead of silently reusing a stale one. A base is complete only once its
`.complete` marker exists: a debootstrap killed half-way is thrown away and redone.

Each node then gets its own writable copy: an overlay (base as lowerdir, the node's own upperdir)
where the kernel allows it, else `cp -a --reflink=auto`.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.files import expand_user, open_private, write_atomic
from toolkit.providers.base import ProgressCallback
from toolkit.state import gpuctl_home, own_dir

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# ifupdown: Debian's own place for persistent network config (/etc/network/interfaces.d), which
# the mtu role writes. ibverbs-providers + perftest: the RDMA userspace (incl. the erdma provider)
# is preinstalled here because lab nodes have no route to a package mirror. rdma-core is left
# out: it is the udev/systemd service for kernel RDMA devices, which lab nodes do not have.
PACKAGES = (
    "openssh-server", "iproute2", "python3", "iputils-ping", "sudo", "procps", "ifupdown",
    "ibverbs-providers", "perftest",
    "python3-apt",  # Ansible's apt module needs it and would otherwise try to fetch it
    # `gpuctl bench`: mpirun on the launch node starts the ranks of the other nodes over ssh.
    "openmpi-bin",
    # Shared volumes of kind object: the storage role mounts the lab's S3-compatible store with it.
    "s3fs",

)
RECIPE_VERSION = "1"
# debootstrap's `I: <Verb> ...` lines -> the phase they belong to (a package is retrieved and then
# validated, so those two are one phase); a new phase is reported when it starts.
DEBOOTSTRAP_PHASES = {
    "Retrieving": "downloading", "Validating": "downloading", "Checking": "downloading",
    "Valid": "downloading", "Resolving": "downloading", "Found": "downloading",
    "Extracting": "extracting", "Installing": "installing core packages",
    "Unpacking": "unpacking", "Configuring": "configuring",
}
STILL_BUILDING_EVERY = 15.0  # seconds between "still building" lines while a phase goes on


def cache_root() -> Path:
    """`$GPUCTL_CACHE` (shared between GPUCTL_HOMEs, e.g. by tests) or `$GPUCTL_HOME/cache`."""
    env = os.environ.get("GPUCTL_CACHE")
    return expand_user(env, where="GPUCTL_CACHE") if env else gpuctl_home() / "cache"


def base_key() -> str:
    recipe = "|".join([RECIPE_VERSION, SUITE, "minbase", *PACKAGES])
    return f"debian12-{hashlib.sha256(recipe.encode()).hexdigest()[:10]}"


def base_root() -> Path:
    return cache_root() / "lab-rootfs" / base_key() / "root"


def ensure_base(progress: ProgressCallback) -> Path:
    """Return the cached base root, building it first if needed (once, under a lock)."""
    root = base_root()
    marker = root.parent / ".complete"
    if marker.exists():
        return root
    own_dir(root.parent)
    # Opened in place without following a link (toolkit.files): the lab runs as root.
    lock = open_private(root.parent / ".lock", os.O_RDWR | os.O_CREAT)
    with os.fdopen(lock, "r+"):
        fcntl.flock(lock, fcntl.LOCK_EX)  # two `up`s at once build it once
        if marker.exists():
            return root
        progress(f"building the Debian 12 base root once (debootstrap, cached at {root.parent})")
        staging = root.parent / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        argv = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
                str(staging), MIRROR]
        returncode, output = run_debootstrap(argv, progress)
        if returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise ProviderError(
                f"debootstrap of the lab base root failed: {output.strip()[-600:]}",
                hint=f"check that {MIRROR} is reachable from this machine",
            )
        _strip_for_sharing(staging)
        shutil.rmtree(root, ignore_errors=True)
        staging.rename(root)
        write_atomic(marker, base_key() + "\n")
    return root


def run_debootstrap(argv: Sequence[str], progress: ProgressCallback, *,
                    every: float = STILL_BUILDING_EVERY) -> tuple[int, str]:
    """Run debootstrap and report as it goes: one line as each phase starts (downloading,
    extracting, installing core packages, unpacking, configuring, with the time so far), and one
    "still building the base root" line every `every` seconds in between. Returns the exit code
    and the last lines of its output (stdout and stderr together) for the error message."""
    started = time.monotonic()
    process = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace")
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            lines.put(raw.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    tail: deque[str] = deque(maxlen=40)
    phase, items, next_tick = "starting", 0, started + every
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.0, next_tick - time.monotonic()))
            except queue.Empty:
                done = f", {items} so far" if items else ""
                progress(f"still building the base root, {time.monotonic() - started:.0f} s ({phase}{done})")
                next_tick = time.monotonic() + every
                continue
            if line is None:
                break
            tail.append(line)
            match = re.match(r"I: ([A-Z][a-z]+)\b", line)
            now_in = DEBOOTSTRAP_PHASES.get(match.group(1)) if match else None
            if now_in is not None and now_in != phase:
                phase, items = now_in, 0
                progress(f"debootstrap: {phase} ({time.monotonic() - started:.0f} s)")
                next_tick = time.monotonic() + every
            if match is not None and match.group(1) in ("Retrieving", "Extracting", "Unpacking", "Configuring"):
                items += 1
        returncode = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    if returncode == 0:
        progress(f"debootstrap: base system installed ({time.monotonic() - started:.0f} s)")
    return returncode, "\n".join(tail)


def _strip_for_sharing(root: Path) -> None:
    # Host keys made by openssh-server's postinst would be shared by every node; each node gets
    # its own, pinned in known_hosts. The package cache only costs space.
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    subprocess.run(["chroot", str(root), "apt-get", "clean"], capture_output=True, check=False)
    (root / "etc/machine-id").write_text("")


def overlay_supported(scratch: Path) -> bool:
    """Can the kernel mount an overlay here? Tried once in a throwaway mount namespace."""
    if shutil.which("unshare") is None:
        return False
    for sub in ("lower", "upper", "work", "merged"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    opts = f"lowerdir={scratch}/lower,upperdir={scratch}/upper,workdir={scratch}/work"
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "mount", "-t", "overlay", "overlay",
         "-o", opts, str(scratch / "merged")],
        capture_output=True, check=False,
    )
    shutil.rmtree(scratch, ignore_errors=True)
    return done.returncode == 0


def copy_root(base: Path, target: Path, *, strict_xattrs: bool = False) -> None:
    """The fallback when overlays are unavailable: a full copy, cheap on reflink filesystems.
    `strict_xattrs`: fail where an extended attribute cannot be copied (`cp -a` alone drops it
    silently; an overlay layer's opaque directories are one)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    preserve = ["--preserve=xattr"] if strict_xattrs else []
    done = subprocess.run(["cp", "-a", *preserve, "--reflink=auto", str(base), str(target)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ProviderError(f"copying the base root to {target} failed: {done.stderr.strip()[-400:]}")
