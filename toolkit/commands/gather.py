"""`gpuctl gather DIR`: run the gather script on this machine, writing a bundle into DIR."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dest", metavar="DIR", help="bundle directory to write (created if need be)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit import hints
    from toolkit.topology.gather import run_gather_locally

    dest = run_gather_locally(Path(args.dest))
    print(f"bundle written to {dest}; read it with: {hints.command('detect', dest)}")
    return 0
