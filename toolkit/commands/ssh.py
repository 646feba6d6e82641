"""`gpuctl ssh SPEC NODE [-- COMMAND...]`: a shell or one command on a node, host key pinned."""

from __future__ import annotations

import argparse
import os

from toolkit.commands._driver import add_backend_argument, driver_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("node", metavar="NODE", help="node name (see `gpuctl status`) or its index from 0")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="run this instead of an interactive shell")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.errors import UsageError
    from toolkit.spec.loader import load_spec

    spec = load_spec(args.spec)
    outputs = driver_for(spec, args).outputs(spec)
    by_name = {n.name: n for n in outputs.nodes}
    node = by_name.get(args.node)
    if node is None and args.node.isdigit() and int(args.node) < len(outputs.nodes):
        node = outputs.nodes[int(args.node)]
    if node is None:
        raise UsageError(f"no node {args.node} in {spec.name}; nodes: {', '.join(by_name)}")
    argv = ["ssh", "-p", str(node.ssh_port), "-o", "StrictHostKeyChecking=yes"]
    if outputs.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={outputs.known_hosts}"]
    if outputs.ssh_private_key:
        argv += ["-i", str(outputs.ssh_private_key), "-o", "IdentitiesOnly=yes"]
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    argv += [f"{node.ssh_user}@{node.ssh_host}", *command]
    os.execvp("ssh", argv)
    return 0  # not reached: exec replaces this process
