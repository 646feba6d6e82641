"""The `gpuctl` command line: a thin dispatcher over the library.

Each subcommand lives in its own module under `toolkit.commands` with two functions:
`add_arguments(parser)` and `run(args) -> int`. Command modules import nothing heavy at module
level (no Pulumi, no cloud SDK, no ansible), so `gpuctl --help` stays fast; they import what they
need inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from toolkit import __version__
from toolkit.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, GpuctlError
from toolkit.secrets import redact

# name -> (module, one-line help). Adding a command: a module in toolkit/commands and one line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("toolkit.commands.validate", "check a cluster spec against the schema and catalog"),
    "plan": ("toolkit.commands.plan", "show what would be created and what it costs"),
    "catalog": ("toolkit.commands.catalog", "list the instance catalog with sources"),
    "detect": ("toolkit.commands.detect", "read captures or a gathered bundle and print the node's topology"),
    "gather": ("toolkit.commands.gather", "collect this node's raw topology outputs into a bundle directory"),
    "tune": ("toolkit.commands.tune", "compute NCCL settings for a node from its topology, with reasons"),
    "check-log": ("toolkit.commands.check_log", "flag an NCCL run that did not use the fabric it should have"),
    "outputs": ("toolkit.commands.outputs", "print a cluster's nodes and addresses"),
    "up": ("toolkit.commands.up", "create the cluster and configure it"),
    "configure": ("toolkit.commands.configure", "install the stack and write tuned NCCL settings on every node"),
    "status": ("toolkit.commands.status", "show the cluster's nodes and state"),
    "ssh": ("toolkit.commands.ssh", "open a shell or run a command on a node"),
    "down": ("toolkit.commands.down", "remove everything the cluster created and verify nothing is left"),
}


def _load(module_name: str) -> ModuleType:
    return importlib.import_module(module_name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuctl",
        description="GPU clusters with a working RDMA fabric on Alibaba Cloud and Tencent Cloud.",
    )
    parser.add_argument("--version", action="version", version=f"gpuctl {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks for internal errors"
    )
    sub = parser.add_subparsers(dest="_command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        _load(module_name).add_arguments(command_parser)
        command_parser.set_defaults(_module=module_name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(args.debug or os.environ.get("GPUCTL_DEBUG"))
    try:
        return int(_load(args._module).run(args))
    except GpuctlError as error:
        # Every error path ends here: one redaction, so no credential value is ever printed.
        print(f"gpuctl {args._command}: error: {redact(str(error))}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"gpuctl {args._command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `gpuctl plan | head` closes stdout early; that is not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception:  # a bug: say so plainly, traceback only on request
        if debug:
            raise
        print(
            f"gpuctl {args._command}: internal error (a bug in gpuctl). "
            "Re-run with --debug for the traceback and report it.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
