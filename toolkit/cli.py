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

from toolkit import __version__, output, progress
from toolkit.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, GpuctlError

# name -> (module, one-line help). Adding a command: a module in toolkit/commands and one line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("toolkit.commands.validate", "check a cluster spec against the schema and catalog"),
    "plan": ("toolkit.commands.plan", "show what would be created and what it costs"),
    "catalog": ("toolkit.commands.catalog", "list the instance catalog with sources"),
    "prices": ("toolkit.commands.prices", "read live prices from the clouds into the dated price cache"),
    "choose": ("toolkit.commands.choose", "rank both clouds' GPU offers for a job: price, busbw, sources"),
    "detect": ("toolkit.commands.detect", "read captures or a gathered bundle and print the node's topology"),
    "gather": ("toolkit.commands.gather", "collect this node's raw topology outputs into a bundle directory"),
    "tune": ("toolkit.commands.tune", "compute NCCL settings for a node from its topology, with reasons"),
    "check-log": ("toolkit.commands.check_log", "flag an NCCL run that did not use the fabric it should have"),
    "report": ("toolkit.commands.report", "render bench runs as an HTML page with plots (or markdown)"),
    "bench": ("toolkit.commands.bench", "run nccl-tests across the cluster: busbw, verdict, cost per bandwidth"),
    "autotune": ("toolkit.commands.autotune", "sweep a few NCCL knobs; keep only what beats the default beyond noise"),
    "outputs": ("toolkit.commands.outputs", "print a cluster's nodes and addresses"),
    "up": ("toolkit.commands.up", "create the cluster and configure it"),
    "configure": ("toolkit.commands.configure", "install the stack and write tuned NCCL settings on every node"),
    "status": ("toolkit.commands.status", "show the cluster's nodes and state"),
    "ssh": ("toolkit.commands.ssh", "open a shell or run a command on a node"),
    "down": ("toolkit.commands.down", "remove everything the cluster created and verify nothing is left"),
    "reap": ("toolkit.commands.reap", "find every cluster in state and cloud tags; remove the expired ones"),
    "cost": ("toolkit.commands.cost", "what a cluster has cost so far, and will cost by its TTL"),
    "hostfile": ("toolkit.commands.hostfile", "the ready nodes with their GPUs, for mpirun, DeepSpeed or torchrun"),
    "image": ("toolkit.commands.image", "bake a pool's node into an image its nodes start from; list, delete"),
    "completion": ("toolkit.commands.completion", "print a bash or zsh completion script for gpuctl"),
}

# name -> the examples that end its --help (two or three each; tests/cli/test_help.py checks them).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "validate": ("gpuctl validate examples/alicloud-erdma-2x8.yaml",
                 "gpuctl validate examples/*.yaml        # every file checked, first failure's exit code",
                 "gpuctl validate --json examples/local-lab.yaml | jq .ok"),
    "plan": ("gpuctl plan examples/alicloud-erdma-2x8.yaml",
             "gpuctl plan --json examples/tencentcloud-hcc-2x8.yaml | jq .cost.for_ttl"),
    "catalog": ("gpuctl catalog alicloud --fabric erdma",
                "gpuctl catalog --json | jq '.[].name'"),
    "prices": ("gpuctl prices refresh --provider alicloud --region cn-wulanchabu",
               "gpuctl prices refresh                       # every region the cache holds",
               "gpuctl prices refresh --json --provider tencentcloud --region ap-shanghai | jq '.entries[].value'"),
    "choose": ("gpuctl choose --gpu A10 --spot --hours 10", "gpuctl choose --gpu-memory 80 --gpus-per-node 8 "
               "--gpus 16 --fabric required --hours 168 --write-spec cluster.yaml"),
    "detect": ("gpuctl detect examples/captures/h100-roce-node/",
               "gpuctl detect --json nvidia-smi-topo.txt ibv_devinfo.txt"),
    "gather": ("gpuctl gather bundle/                  # on a node",
               "gpuctl gather /tmp/node-0 && gpuctl detect /tmp/node-0"),
    "tune": ("gpuctl tune --explain examples/captures/h100-roce-node/",
             "gpuctl tune --spec cluster.yaml bundle/ > nccl.conf",
             "gpuctl tune --json --set NCCL_IB_TIMEOUT=22 bundle/"),
    "check-log": ("gpuctl check-log nccl-debug.log --topology bundle/",
                  "gpuctl check-log --json all_reduce_perf.out"),
    "report": ("gpuctl report runs/2x8-erdma/              # writes gpuctl-report/report.html",
               "gpuctl report runs/tuned runs/other -o cmp/  # two runs side by side",
               "gpuctl report --format md runs/2x8-erdma/ -o pr/"),
    "bench": ("sudo gpuctl bench examples/local-lab.yaml              # lab: replayed outputs, real launch",
              "gpuctl bench --quick examples/alicloud-erdma-2x8.yaml   # a one-minute fabric check",
              "gpuctl bench --compare-default --repeats 5 examples/tencentcloud-hcc-2x8.yaml"),
    "autotune": ("gpuctl autotune examples/alicloud-erdma-2x8.yaml",
                 "gpuctl autotune --collectives all_reduce --repeats 5 examples/tencentcloud-hcc-2x8.yaml"),
    "outputs": ("gpuctl outputs examples/alicloud-erdma-2x8.yaml",
                "gpuctl outputs --json examples/local-lab.yaml | jq -r '.nodes[].ssh_host'"),
    "up": ("sudo gpuctl up examples/local-lab.yaml",
           "sudo gpuctl up examples/local-lab.yaml --down-after   # the demo: up, show, remove",
           "gpuctl up --json --yes examples/alicloud-erdma-2x8.yaml > up.json   # CI: the cost confirmed in advance"),
    "configure": ("sudo gpuctl configure examples/local-lab.yaml",
                  "sudo gpuctl configure --full examples/local-lab.yaml",
                  "gpuctl configure --json examples/alicloud-erdma-2x8.yaml | jq '.nodes[].result'"),
    "status": ("gpuctl status examples/local-lab.yaml",
               "gpuctl status --json examples/alicloud-erdma-2x8.yaml | jq .expires_at"),
    "ssh": ("sudo gpuctl ssh examples/local-lab.yaml lab-node-0",
            "sudo gpuctl ssh examples/local-lab.yaml 1 -- cat /etc/nccl.conf"),
    "down": ("sudo gpuctl down examples/local-lab.yaml",
             "gpuctl down --json examples/alicloud-erdma-2x8.yaml | jq .removed"),
    "reap": ("gpuctl reap                                  # dry run: a table of every cluster",
             "gpuctl reap --yes                            # destroy the expired ones through down",
             "gpuctl reap --json --provider tencentcloud | jq '.clusters[] | select(.status==\"orphaned\")'"),
    "cost": ("gpuctl cost examples/alicloud-erdma-2x8.yaml",
             "gpuctl cost --json examples/tencentcloud-hcc-2x8.yaml | jq .remaining"),
    "hostfile": ("gpuctl hostfile examples/alicloud-erdma-2x8.yaml > hosts && mpirun --hostfile hosts ...",
                 "torchrun $(gpuctl hostfile --format torchrun examples/tencentcloud-hcc-2x8.yaml) train.py"),
    "image": ("sudo gpuctl image build examples/local-lab.yaml --pool node --name lab-node",
              "gpuctl image list",
              "sudo gpuctl image delete lab-node"),
    "completion": ("gpuctl completion bash > /etc/bash_completion.d/gpuctl",
                   "source <(gpuctl completion bash)              # this shell only",
                   "gpuctl completion zsh > \"${fpath[1]}/_gpuctl\"     # zsh: then restart the shell"),
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
    parser.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)
    sub = parser.add_subparsers(dest="_command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(
            name, help=help_text, description=help_text, epilog=examples_epilog(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _load(module_name).add_arguments(command_parser)
        if "--quiet" not in command_parser._option_string_actions:
            # Also after the command (`gpuctl up --quiet SPEC`); SUPPRESS keeps a `gpuctl -q up` set.
            command_parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                                        help=QUIET_HELP)
        command_parser.set_defaults(_module=module_name)
    return parser


QUIET_HELP = "no progress lines: only errors and the final summary"


def examples_epilog(name: str) -> str:
    return "Examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES.get(name, ()))


def main(argv: Sequence[str] | None = None) -> int:
    # One output path (toolkit.output): every line any command prints is redacted and neutralised.
    with output.installed():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(args.debug or os.environ.get("GPUCTL_DEBUG"))
    # With --json, stdout carries the document alone: progress goes to stderr.
    progress.setup(quiet=bool(getattr(args, "quiet", False)), to_stderr=bool(getattr(args, "json", False)))
    try:
        return int(_load(args._module).run(args))
    except GpuctlError as error:
        # Every error path ends here; like every other line it is cleaned on its way out (toolkit.output).
        print(f"gpuctl {args._command}: error: {error}", file=sys.stderr)
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
    finally:
        progress.finish()
