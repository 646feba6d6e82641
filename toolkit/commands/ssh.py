"""`gpuctl ssh SPEC NODE [-- COMMAND...]`: a shell or one command on a node, host key pinned."""

from __future__ import annotations

import argparse
import os

from toolkit.commands._driver import add_backend_argument, driver_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("node", metavar="NODE", help="node name (as the status command lists it) or its index from 0")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="run this instead of an interactive shell")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_spec_arg
    from toolkit.errors import UsageError
    from toolkit.paths import Paths
    from toolkit.ssh import ssh_argv

    spec = load_spec_arg(args.spec)
    outputs = driver_for(spec, args).outputs(spec)
    by_name = {n.name: n for n in outputs.nodes}
    node = by_name.get(args.node)
    if node is None and args.node.isdigit() and int(args.node) < len(outputs.nodes):
        node = outputs.nodes[int(args.node)]
    if node is None:
        raise UsageError(f"no node {args.node} in {spec.name}; nodes: {', '.join(by_name)}")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    # Cloud nodes are pinned in the cluster's known_hosts by configure (trust on first use).
    known_hosts = outputs.known_hosts or Paths.of(spec.name).known_hosts
    from toolkit.secrets import child_env

    # ssh needs no cloud credential: it gets the environment without them.
    os.execvpe("ssh", ssh_argv(outputs, node, command, known_hosts=known_hosts), child_env())
    return 0  # not reached: exec replaces this process
