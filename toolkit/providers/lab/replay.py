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
import shutil
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.topology.kinds import replay_commands

REPLAY_DIR = "usr/local/share/gpuctl-replay"  # inside a node root
STANDIN = "usr/local/bin/gpuctl-replay"

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


def capture_files(bundle: Path) -> list[Path]:
    if bundle.is_file():
        return [bundle]
    if not bundle.is_dir():
        raise ProviderError(f"capture bundle {bundle} does not exist",
                            hint="node_pools[].capture must name a directory or file of real captures")
    return sorted(p for p in bundle.rglob("*") if p.is_file())


def classify(files: list[Path]) -> dict[str, list[dict[str, str]]]:
    """command -> answers [{args, file, source}]; the first file with a command's markers wins."""
    answers: dict[str, list[dict[str, str]]] = {}
    taken: set[tuple[str, str]] = set()
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for command, args in replay_commands(text):
            if (command, args) not in taken:
                taken.add((command, args))
                answers.setdefault(command, []).append({"args": args, "file": path.name, "source": str(path)})
    return answers


def install(bundle: Path, root: Path) -> list[str]:
    """Copy the bundle's captures into the node root and install one stand-in per command.

    Returns the commands installed.
    """
    files = capture_files(bundle)
    answers = classify(files)
    target = root / REPLAY_DIR
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, target / path.name)
    (target / "manifest.json").write_text(json.dumps({"bundle": str(bundle), "answers": answers}, indent=2))
    standin = root / STANDIN
    standin.parent.mkdir(parents=True, exist_ok=True)
    standin.write_text(STANDIN_SCRIPT)
    standin.chmod(0o755)
    for command in answers:
        link = root / "usr/local/bin" / command
        link.unlink(missing_ok=True)
        link.symlink_to("gpuctl-replay")
    (root / "etc/gpuctl-lab").write_text(
        "This is a gpuctl lab node: it has no GPU and no RDMA NIC.\n"
        f"{', '.join(sorted(answers)) or 'no command'} replay captured output of real hardware from {bundle}.\n"
    )
    return sorted(answers)


def replay_note(bundle: str) -> str:
    """The note the gather script writes into the bundle it collects on a lab node."""
    return f"replayed: gpuctl lab node without GPU; hardware outputs replay the capture bundle {bundle}"
