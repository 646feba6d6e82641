"""A host for the lab's `down` and `status` with nothing real behind it, recording every action.

The lab acts on the host through a few doors only: `subprocess.run` (its runner `lab.host.sh`, and
`ip netns pids`), `subprocess.Popen`, `os.kill`, `shutil.rmtree`, `os.unlink`/`os.remove`/`os.rmdir`
and `socket.create_connection` (the sshd probe). `FakeHost.installed` replaces each for the length
of a case: `ip` answers from a table of links, namespaces and their pids the way iproute2 prints
them (`ip -j link show` JSON, `ip netns list` lines "name (id: N)", `ip netns pids` one pid a line),
and every destructive call is recorded with its target and never reaches the real host, unless its
target lies inside the case's own cluster directory (then the real rmtree/unlink runs there, in a
temporary home). `foreign()` lists the recorded actions whose target gpuctl's plan for the cluster
would not create: the rules are written out here, from the plan's documented layout, not read
from the code under test.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# What any Linux host has, and what other tools make: none of it is the lab's.
HOST_LINKS = ("lo", "eth0", "docker0", "virbr0", "cni0", "gl-00000-m", "gl-00000-m1")
HOST_NETNS = {"cni-1f2e3d4c": [700001], "gl-00000-n1": [700002], "decoy": [700003]}


@dataclass
class FakeHost:
    cluster: str
    tag: str  # written out by the test, e.g. "gl-8f383" for cluster "hostile"
    home: Path
    nodes: int = 2
    links: set[str] = field(default_factory=set)
    netns: dict[str, list[int]] = field(default_factory=dict)
    actions: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The lab as its `up` left it: two bridges, two veth host ends and a namespace per node,
        # one sshd pid in each namespace.
        self.links = set(HOST_LINKS) | {f"{self.tag}-m", f"{self.tag}-f"}
        for i in range(1, self.nodes + 1):
            self.links |= {f"{self.tag}-m{i}", f"{self.tag}-f{i}"}
            self.netns[f"{self.tag}-n{i}"] = [800000 + i]
        for name, pids in HOST_NETNS.items():
            self.netns[name] = list(pids)

    # ------------------------------------------------------------------ what the lab may act on
    @property
    def cluster_dir(self) -> Path:
        return self.home / "clusters" / self.cluster

    def own_pids(self) -> set[int]:
        return {800000 + i for i in range(1, 1000)}

    def is_own(self, kind: str, target: str) -> bool:
        tag = re.escape(self.tag)
        if kind == "ip link delete":
            return re.fullmatch(tag + r"-[mf][0-9]*", target) is not None
        if kind == "ip netns delete":
            return re.fullmatch(tag + r"-n[0-9]+", target) is not None
        if kind == "kill":
            return int(target.split()[0]) in self.own_pids()
        if kind in ("rmtree", "unlink", "umount"):
            allowed = [self.cluster_dir, self.home / "lab-storage" / self.cluster, self.home / "locks"]
            return any(_inside(target, directory) for directory in allowed)
        if kind == "connect":
            host = target.rsplit(":", 1)[0]
            try:
                return ipaddress.ip_address(host) in ipaddress.ip_network("10.213.0.0/16")
            except ValueError:
                return False
        return False  # a command the lab's down and status never run

    def foreign(self) -> list[str]:
        return [f"{kind} {target}" for kind, target in self.actions if not self.is_own(kind, target)]

    def lab_left(self) -> list[str]:
        """What of the lab's own objects is still on the fake host."""
        left = sorted(link for link in self.links if link.startswith(self.tag))
        return left + sorted(ns for ns in self.netns if ns.startswith(self.tag))

    # ------------------------------------------------------------------ the doors
    def run(self, argv: Any, *args: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        argv = [str(a) for a in argv]
        out, code = self._ip(argv) if argv[:1] == ["ip"] else self._other(argv)
        text = kwargs.get("text") or kwargs.get("universal_newlines")
        return subprocess.CompletedProcess(argv, code, out if text else out.encode(), "" if text else b"")

    def _ip(self, argv: list[str]) -> tuple[str, int]:
        words = argv[1:]
        if words == ["-j", "link", "show"]:
            return json.dumps([{"ifname": name} for name in sorted(self.links)]), 0
        if words == ["netns", "list"]:
            return "".join(f"{name} (id: {i})\n" for i, name in enumerate(sorted(self.netns))), 0
        if words[:2] == ["netns", "pids"] and len(words) == 3:
            return "".join(f"{pid}\n" for pid in self.netns.get(words[2], [])), 0 if words[2] in self.netns else 1
        if words[:2] == ["netns", "delete"] and len(words) == 3:
            self.actions.append(("ip netns delete", words[2]))
            gone = self.netns.pop(words[2], None)
            index = words[2].rsplit("-n", 1)[-1]
            if gone is not None and words[2].startswith(self.tag):  # its veths go with it
                self.links -= {f"{self.tag}-m{index}", f"{self.tag}-f{index}"}
            return "", 0 if gone is not None else 1
        if words[:2] == ["link", "delete"] and len(words) == 3:
            self.actions.append(("ip link delete", words[2]))
            present = words[2] in self.links
            self.links.discard(words[2])
            return "", 0 if present else 1
        if words == ["-j", "-4", "addr", "show"]:
            return "[]", 0
        self.actions.append(("ran", " ".join(argv)))
        return "", 1

    def _other(self, argv: list[str]) -> tuple[str, int]:
        if argv[:2] == ["umount", "-l"] and len(argv) == 3:
            self.actions.append(("umount", argv[2]))
            return "", 0
        self.actions.append(("ran", " ".join(argv)))
        return "", 127

    def popen(self, argv: Any, *args: Any, **kwargs: Any) -> Any:
        self.actions.append(("ran", " ".join(str(a) for a in argv)))
        raise OSError("the fake host starts no process")

    def kill(self, pid: int, sig: int) -> None:
        self.actions.append(("kill", f"{pid} {sig}"))
        for pids in self.netns.values():
            if pid in pids:
                pids.remove(pid)
                return
        # Never passed on: a pid of a real process stays untouched, and reads as gone.
        raise ProcessLookupError(pid)

    def connect(self, address: Any, *args: Any, **kwargs: Any) -> Any:
        self.actions.append(("connect", f"{address[0]}:{address[1]}"))
        raise OSError("the fake host has no network")

    @contextmanager
    def installed(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHost]:
        real_rmtree, real_unlink, real_rmdir = shutil.rmtree, os.unlink, os.rmdir

        def rmtree(path: Any, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("dir_fd") is None:
                self.actions.append(("rmtree", os.path.abspath(path)))
                if not self.is_own("rmtree", os.path.abspath(path)):
                    return
            real_rmtree(path, *args, **kwargs)

        def guarded(real: Any) -> Any:
            def call(path: Any, *args: Any, **kwargs: Any) -> None:
                if kwargs.get("dir_fd") is None:  # relative to a directory an allowed rmtree opened
                    self.actions.append(("unlink", os.path.abspath(path)))
                    if not self.is_own("unlink", os.path.abspath(path)):
                        raise PermissionError(f"the fake host refuses to remove {path}")
                real(path, *args, **kwargs)
            return call

        with monkeypatch.context() as patch:
            patch.setattr(subprocess, "run", self.run)
            patch.setattr(subprocess, "Popen", self.popen)
            patch.setattr(os, "kill", self.kill)
            patch.setattr(shutil, "rmtree", rmtree)
            patch.setattr(os, "unlink", guarded(real_unlink))
            patch.setattr(os, "remove", guarded(real_unlink))
            patch.setattr(os, "rmdir", guarded(real_rmdir))
            patch.setattr(socket, "create_connection", self.connect)
            patch.setattr("toolkit.providers.lab.host.require_root", lambda: None)
            yield self


def _inside(path: str, directory: Path) -> bool:
    path = os.path.normpath(path)
    return path == str(directory) or path.startswith(str(directory) + "/")
