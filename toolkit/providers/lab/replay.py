"""Stand-in `nvidia-smi`, `ibv_devinfo`, ... that replay a real capture bundle on a lab node.

Lab nodes have no GPU and no RDMA NIC. So that gathering and tuning run exactly the path a real
node runs, each node gets stand-ins for the capture commands its pool's bundle has answers for.
A stand-in prints the captured output unchanged on stdout, and says on stderr (and through the
marker file /etc/gpuctl-lab) that the output is replayed, never measured. Commands the bundle
has no answer for are not installed, so the gather script notes them as missing, as it would on
a real host.

Which file answers which command comes from the topology's one registry of capture kinds
(`toolkit.topology.kinds`), the same recognition `gpuctl detect` uses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from toolkit.providers.lab import node_files
from toolkit.providers.lab.capture import CaptureFile, read_bundle
from toolkit.topology.kinds import replay_commands

REPLAY_DIR = "usr/local/share/gpuctl-replay"  # inside a node root
STANDIN_DIR = "usr/local/bin"
STANDIN_NAME = "gpuctl-replay"
STANDIN = f"{STANDIN_DIR}/{STANDIN_NAME}"

STANDIN_SCRIPT = r'''#!/usr/bin/python3
"""gpuctl lab stand-in: replays captured output of real hardware (installed by gpuctl)."""
import json, os, sys
manifest = json.load(open("/usr/local/share/gpuctl-replay/manifest.json"))
command = os.path.basename(sys.argv[0])
args = " ".join(sys.argv[1:])
for answer in manifest["answers"].get(command, []):
    if answer["args"] == "" or answer["args"] in args:
        sys.stderr.write("gpuctl-lab: REPLAYED output of `%s %s` from capture %s (no %s on this lab node)\n"
                         % (command, args, answer["source"], "GPU" if command == "nvidia-smi" else "RDMA NIC"))
        sys.stdout.write(open("/usr/local/share/gpuctl-replay/" + answer["file"]).read())
        sys.exit(0)
sys.stderr.write("gpuctl-lab: this lab node has no GPU and capture %s has no output for `%s %s`\n"
                 % (manifest["bundle"], command, args))
sys.exit(6)
'''


def classify(files: Sequence[CaptureFile]) -> dict[str, list[dict[str, str]]]:
    """command -> answers [{args, file, source}]; the first file with a command's markers wins."""
    answers: dict[str, list[dict[str, str]]] = {}
    taken: set[tuple[str, str]] = set()
    for capture in files:
        text = capture.data.decode(errors="replace")
        for command, args in replay_commands(text):
            if (command, args) not in taken:
                taken.add((command, args))
                answers.setdefault(command, []).append({"args": args, "file": capture.name, "source": capture.source})
    return answers


def install(bundle: Path, root: Path) -> list[str]:
    """Copy the bundle's captures that answer a command into the node root (`root`: the node's writable
    layer), and install one stand-in per command.

    The bundle is read only from inside its directory (`capture.read_bundle`); each copy keeps at most
    its source's permission bits (read by all, 0644, only if the source was), and every write into the
    node goes through `node_files` (never through a link the node made). Returns the commands installed.
    """
    files = read_bundle(bundle)
    answers = classify(files)
    answering = {answer["file"] for found in answers.values() for answer in found}
    with node_files.directory(root, REPLAY_DIR) as target:
        for name in os.listdir(target):  # what an earlier install left
            node_files.remove(target, name)
        for capture in files:
            if capture.name in answering:
                node_files.write(target, capture.name, capture.data, mode=capture.mode & 0o644)
        node_files.write(target, "manifest.json", json.dumps({"bundle": str(bundle), "answers": answers}, indent=2),
                         mode=0o644)
    with node_files.directory(root, STANDIN_DIR) as bin_dir:
        node_files.write(bin_dir, STANDIN_NAME, STANDIN_SCRIPT, mode=0o755)
        for command in answers:
            node_files.symlink(bin_dir, command, STANDIN_NAME)
    with node_files.directory(root, "etc") as etc:
        node_files.write(etc, "gpuctl-lab",
                         "This is a gpuctl lab node: it has no GPU and no RDMA NIC.\n"
                         f"{', '.join(sorted(answers)) or 'no command'} replay captured output of real hardware "
                         f"from {bundle}.\n", mode=0o644)
    return sorted(answers)


def replay_note(bundle: str) -> str:
    """The note the gather script writes into the bundle it collects on a lab node."""
    return f"replayed: gpuctl lab node without GPU; hardware outputs replay the capture bundle {bundle}"
