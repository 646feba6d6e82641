"""A stand-in of an image that carries the NVIDIA stack, laid into the lab nodes of a pool whose
`gpu_stack` is `image`.

A cloud GPU image has the driver (a package owning /usr/bin/nvidia-smi, the loaded module's
/proc/driver/nvidia/version), a CUDA toolkit in /usr/local/cuda-<major.minor> and NCCL's library in
the system library directory. Lab nodes have no GPU, so each of those is a stand-in that says so:
a package registered in the node's own dpkg database (`dpkg-query -S` answers for it as for a real
package), an nvidia-smi that hands over to the capture replay or exits 6, an nvcc that prints the
output format of the real one, a libnccl file that is no library, and the module's version line in
a file the inventory points the driver role at (a lab node's /proc is the host's). configure's roles
then take the same find-and-keep path they take on a cloud image, and install nothing.
"""

from __future__ import annotations

from pathlib import Path

from toolkit.providers.lab import node_files
from toolkit.providers.lab.state import StandIn

PACKAGE = "gpuctl-lab-standin-gpu-stack"
DRIVER_VERSION_DIR = "usr/local/share/gpuctl-replay/driver"
# Where the driver role reads the "loaded module" version on such a node (host var of the inventory).
DRIVER_VERSION_FILE = f"/{DRIVER_VERSION_DIR}/version"
LIBRARY_DIR = "usr/lib/x86_64-linux-gnu"
DPKG_DIR = "var/lib/dpkg"
STATUS_LIMIT = 64 * 1024 * 1024
NOTE = "gpuctl lab stand-in: no GPU on this node"

SMI = f"""#!/bin/sh
# {NOTE}; part of package {PACKAGE}. Hands over to the capture replay where the pool has one.
echo "{NOTE}: nvidia-smi of the stand-in image" >&2
if [ -x /usr/local/bin/nvidia-smi ]; then exec /usr/local/bin/nvidia-smi "$@"; fi
exit 6
"""


def _nvcc(cuda: str) -> str:
    # The lines of a real `nvcc --version` (tests/captures/cuda/nvcc-version-12.4.131.txt), release replaced.
    return f"""#!/bin/sh
echo "{NOTE}: nvcc of the stand-in image" >&2
cat <<'OUT'
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on {NOTE}
Cuda compilation tools, release {cuda}, V{cuda}.0
OUT
"""


def _stanza(stand_in: StandIn) -> str:
    return (f"Package: {PACKAGE}\nStatus: install ok installed\nPriority: optional\nSection: misc\n"
            f"Installed-Size: 1\nMaintainer: gpuctl lab <lab@gpuctl.invalid>\nArchitecture: all\n"
            f"Version: {stand_in.driver}\nDescription: {NOTE}\n"
            f" Stands in for an image's NVIDIA driver {stand_in.driver} and NCCL {stand_in.nccl}.\n")


def _status_without_package(text: str) -> str:
    """dpkg's status file without an earlier stand-in stanza (paragraphs split by blank lines)."""
    kept = [p for p in text.split("\n\n") if p.strip() and not p.startswith(f"Package: {PACKAGE}\n")]
    return "\n\n".join(p.strip("\n") for p in kept) + "\n\n" if kept else ""


def install(layer: Path, base: Path, stand_in: StandIn) -> None:
    """Lay the stand-in stack into the node's writable layer (`layer`); `base`: the base root it is
    built on, whose dpkg status the node starts from. Every write goes through `node_files`."""
    library = f"libnccl.so.{stand_in.nccl}"
    with node_files.directory(layer, "usr/bin", base=base) as bin_dir:
        node_files.write(bin_dir, "nvidia-smi", SMI, mode=0o755)
    with node_files.directory(layer, f"usr/local/cuda-{stand_in.cuda}/bin", base=base) as cuda_bin:
        node_files.write(cuda_bin, "nvcc", _nvcc(stand_in.cuda), mode=0o755)
    with node_files.directory(layer, LIBRARY_DIR, base=base) as lib:
        node_files.write(lib, library, f"{NOTE}: not a library\n", mode=0o644)
        node_files.symlink(lib, "libnccl.so.2", library)  # the soname link the loader and the roles follow
    with node_files.directory(layer, DRIVER_VERSION_DIR, base=base) as driver:
        # The loaded module's line, in the format of /proc/driver/nvidia/version.
        node_files.write(driver, "version",
                         f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {stand_in.driver}  ({NOTE})\n", mode=0o644)
    with node_files.directory(layer, DPKG_DIR, base=base) as dpkg:
        current = node_files.read(dpkg, "status", limit=STATUS_LIMIT)
        if current is None:  # overlay: the layer has no copy yet; the node starts from the base's
            current = (base / DPKG_DIR / "status").read_bytes()[:STATUS_LIMIT]
        text = _status_without_package(current.decode(errors="replace"))
        node_files.write(dpkg, "status", text + _stanza(stand_in), mode=0o644)
    with node_files.directory(layer, f"{DPKG_DIR}/info", base=base) as info:
        node_files.write(info, f"{PACKAGE}.list",
                         f"/usr/bin/nvidia-smi\n/{LIBRARY_DIR}/{library}\n/{LIBRARY_DIR}/libnccl.so.2\n", mode=0o644)
