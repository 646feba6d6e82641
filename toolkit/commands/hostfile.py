"""`gpuctl hostfile SPEC [--format mpirun|deepspeed|torchrun|plain]`: the ready nodes of a cluster
for a job launcher (toolkit/jobs/hostfile.py). The file goes to stdout; the nodes left out, each
with why, go to stderr."""

from __future__ import annotations

import argparse
import sys

from toolkit.commands._driver import add_backend_argument, driver_for
from toolkit.vocabulary import HOSTFILE_FORMATS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--format", choices=HOSTFILE_FORMATS, default="mpirun",
                        help="mpirun and deepspeed: `<address> slots=<GPUs>` lines; torchrun: its --nnodes, "
                        "--nproc-per-node and rendezvous arguments; plain: one address per line")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_spec_arg
    from toolkit.jobs.hostfile import ready_hosts, render
    from toolkit.paths import Paths

    spec = load_spec_arg(args.spec)
    outputs = driver_for(spec, args).outputs(spec)
    ready = ready_hosts(outputs, Paths.of(outputs.cluster))
    for name, why in ready.left_out.items():
        print(f"gpuctl hostfile: left out {name}: {why}", file=sys.stderr)
    sys.stdout.write(render(ready.hosts, args.format))  # argparse let only HOSTFILE_FORMATS through
    return 0
