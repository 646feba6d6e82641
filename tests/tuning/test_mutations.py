"""Corrupted real captures never change the tuning silently, and never turn the fabric off.

Each variant is a real capture (the project's own, shipped in the repo) with one kind of damage a
copy-paste, a full disk or a tool crash leaves: cut at a byte, a line dropped, doubled or cut in
half, a character flipped, junk inserted, line endings or encoding changed. For every variant,
detect + tune must end in one of three ways:

- a refusal (ParseError, exit 5);
- the same NCCL settings as the undamaged capture;
- different settings together with a note that names the damage (cut, unreadable, unknown ...).

And a variant may never write NCCL_IB_DISABLE=1 (or narrow NCCL_IB_HCA to fewer devices without a
note) where the original did not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology.detect import detect_paths
from toolkit.tuning.engine import infer_fabric, tune

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
# Real captures shipped with the project (so a plain clone runs this too), as bundles of files.
BASES: dict[str, list[str]] = {
    "h100-roce-node": [str(p.relative_to(REPO)) for p in sorted((REPO / "examples/captures/h100-roce-node").glob("*"))
                       if p.is_file()],
    "lingjun-b300": ["examples/captures/lingjun-b300-node/nvidia-smi-topo-m.txt"],
    "h100-ib-topo-mp": ["tests/captures/topo/h100-ib-8gpu-12nic-topo-mp-tabs-3nic-per-switch.txt",
                        "tests/captures/rdma/h100-ib-cx7-8-active-ports-ibv_devinfo-tabs-lid-sparse-names.txt"],
    "h20-vm": ["tests/captures/topo/h20-vm-8gpu-8nic-pix-reversed-no-nic-legend.txt"],
    "a100-nps4": ["tests/captures/topo/a100-sxm-64gb-4gpu-nv4-4ib-pxb-numa-range.txt"],
    "mixed-roce-ib": ["tests/captures/topo/a100-pcie-1gpu-4nic-cx4lx-roce-cx6-ib-tabs.txt",
                      "tests/captures/rdma/ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt"],
    "erdma-h20": ["tests/topology/captures/erdma-h20-ibv_devinfo-stepmesh-pr32.txt"],
    "cx7-port-down": ["tests/topology/captures/ib-cx7-ibv_devinfo-port-down-deepep-issue60.txt"],
    "nccl-log-roce": ["tests/captures/nccl_log/dgxh100-2node-roce-2hca-plugin-dlerror-nccl2.19.3.txt"],
    "rtx-pcie": ["tests/captures/topo/rtx2080ti-2gpu-pix-no-nic-no-nvlink-autodl-container.txt"],
    "show-gids-indented": ["tests/captures/topo/h20-8gpu-8nic-pix-nic-legend-starts-mlx5_1-sglang-env.txt",
                           "tests/captures/rdma/show-gids-indented-22-spaces-prompt-mlx5-0-1-v1-v2-fe80-ipv4-"
                           "nccl-tests-issue192.txt"],
    "gid-lines": ["tests/captures/rdma/ibv-devinfo-vvv-grep-gid-flattened-one-line-fe80-ipv4-fc00-juniper-jvd-"
                  "appendix-d.txt"],
}
VARIANTS_PER_BASE = 32  # x 12 bases = 384 variants
# Words a note uses when it names damage in what was read.
DAMAGE_WORDS = ("cut", "truncat", "incomplete", "damag", "unreadable", "cannot", "could not", "unknown", "skipp",
                "ignored", "invalid", "not a", "malformed", "missing", "garbl", "encoding", "utf-16", "unparsed",
                "partial", "inconsistent", "symmetric", "diagonal", "differ")


@dataclass(frozen=True)
class Outcome:
    refused: bool
    settings: dict[str, str]
    notes: list[str]
    fabric: str = ""


def run(files: dict[str, bytes], tmp: Path, fabric: str | None) -> Outcome:
    bundle = tmp / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    for old in bundle.iterdir():
        old.unlink()
    for name, data in files.items():
        (bundle / name).write_bytes(data)
    try:
        topology = detect_paths([bundle])
        fabric = fabric or infer_fabric(topology)
        config = tune(topology, fabric=fabric, mtu=None, nccl_version="2.26.2", overrides={}, provider=None)
    except ParseError:
        return Outcome(True, {}, [])
    settings = {s.name: s.value for s in config.pinned()}
    return Outcome(False, settings, [*topology.notes, *config.notes], fabric)


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    lines = data.split(b"\n")
    kind = rng.choice(["cut-byte", "drop-line", "double-line", "cut-line", "flip-char", "junk-line", "crlf",
                       "utf16", "nul", "swap-lines", "tabs-to-spaces", "empty"])
    body = max(1, len(lines) - 1)
    at = rng.randrange(1, body + 1) if body > 1 else 0
    if kind == "cut-byte":
        return kind, data[: rng.randrange(1, max(2, len(data)))]
    if kind == "drop-line":
        return kind, b"\n".join(lines[:at] + lines[at + 1:])
    if kind == "double-line":
        return kind, b"\n".join(lines[: at + 1] + lines[at:])
    if kind == "cut-line":
        line = lines[at]
        return kind, b"\n".join([*lines[:at], line[: len(line) // 2]])
    if kind == "flip-char":
        pos = rng.randrange(len(data))
        return kind, data[:pos] + bytes([rng.choice(b"#@!?~X0 ")]) + data[pos + 1:]
    if kind == "junk-line":
        junk = rng.choice([b"\x1b[31mERROR\x1b[0m", b"-bash: ibv_devinfo: command not found", b"^C", b"%%%%",
                           b"Segmentation fault (core dumped)"])
        return kind, b"\n".join([*lines[:at], junk, *lines[at:]])
    if kind == "crlf":
        return kind, data.replace(b"\n", b"\r\n")
    if kind == "utf16":
        return kind, data.decode("utf-8", errors="replace").encode("utf-16")
    if kind == "nul":
        pos = rng.randrange(len(data))
        return kind, data[:pos] + b"\x00" * 8 + data[pos:]
    if kind == "swap-lines":
        other = rng.randrange(1, body + 1) if body > 1 else 0
        lines[at], lines[other] = lines[other], lines[at]
        return kind, b"\n".join(lines)
    if kind == "tabs-to-spaces":
        return kind, data.replace(b"\t", b"    ")
    return kind, b""


def narrowed(original: dict[str, str], damaged: dict[str, str]) -> list[str]:
    """Ways the damaged settings turn the fabric off or use fewer devices than the original."""
    problems = []
    if damaged.get("NCCL_IB_DISABLE") == "1" and original.get("NCCL_IB_DISABLE") != "1":
        problems.append("NCCL_IB_DISABLE=1")
    before = set(original.get("NCCL_IB_HCA", "").lstrip("=^").split(",")) - {""}
    after = set(damaged.get("NCCL_IB_HCA", "").lstrip("=^").split(",")) - {""}
    if before and after and after < before:
        problems.append(f"NCCL_IB_HCA narrowed to {sorted(after)}")
    return problems


@pytest.mark.parametrize("base", sorted(BASES))
def test_damaged_captures_are_refused_kept_or_noted_never_silent(base: str, tmp_path: Path) -> None:
    originals = {Path(rel).name: (REPO / rel).read_bytes() for rel in BASES[base]}
    clean = run(originals, tmp_path / "clean", None)
    assert not clean.refused, f"{base}: the undamaged capture must be readable"
    fabric = clean.fabric  # what the undamaged capture showed; damage must not change the question
    rng = random.Random(f"gpuctl-mutations-{base}")
    silent: list[str] = []
    outcomes = {"refused": 0, "same": 0, "noted": 0}
    for index in range(VARIANTS_PER_BASE):
        name = rng.choice(sorted(originals))
        kind, data = mutate(originals[name], rng)
        damaged = run({**originals, name: data}, tmp_path / f"v{index}", fabric)
        label = f"{base} #{index} {kind} of {name}"
        if damaged.refused:
            outcomes["refused"] += 1
            continue
        for problem in narrowed(clean.settings, damaged.settings):
            new_notes = [n for n in damaged.notes if n not in clean.notes]
            if not new_notes:
                silent.append(f"{label}: {problem} without a note")
        if damaged.settings == clean.settings:
            outcomes["same"] += 1
            continue
        new_notes = [n.lower() for n in damaged.notes if n not in clean.notes]
        if any(word in note for note in new_notes for word in DAMAGE_WORDS):
            outcomes["noted"] += 1
        else:
            changed = sorted(k for k in {*clean.settings, *damaged.settings}
                             if clean.settings.get(k) != damaged.settings.get(k))
            silent.append(f"{label}: {changed} changed with no note naming the damage")
    assert silent == [], "\n".join(silent)
    assert sum(outcomes.values()) == VARIANTS_PER_BASE
