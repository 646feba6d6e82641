"""Where gpuctl's files live: the checkout's playbooks and templates, and each cluster's directory.

One module, imported by configure, converge and the commands alike, so that no two of them work
out a path on their own (and none imports another just to learn one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolkit.state import cluster_dir

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "templates"
ROLES_PATH = REPO / "playbooks" / "roles"


@dataclass(frozen=True)
class Paths:
    """Everything configure writes or reads in one cluster's directory."""

    base: Path

    @classmethod
    def of(cls, cluster: str, *, create: bool = False) -> Paths:
        return cls(cluster_dir(cluster, create=create))

    @property
    def inventory(self) -> Path:
        return self.base / "inventory.yml"

    @property
    def playbook(self) -> Path:
        """The site playbook: checks, installs, sets the MTU and gathers each node's topology."""
        return self.base / "site.yml"

    @property
    def deliver(self) -> Path:
        """The deliver playbook: installs the files gpuctl computed for each node, and verifies them."""
        return self.base / "deliver.yml"

    def node_local(self, phase: str) -> Path:
        """The controller's playbook of a node-local run's phase (configure --node-local): `site`
        ships the site playbook to each node and runs it there, `finish` ships each node's tuned
        files and runs finish.yml there; each fetches every node's report."""
        return self.base / f"node_local_{phase}.yml"

    @property
    def config(self) -> Path:
        return self.base / "ansible.cfg"

    @property
    def bundles(self) -> Path:
        return self.base / "bundles"

    @property
    def nccl(self) -> Path:
        return self.base / "nccl"

    @property
    def records(self) -> Path:
        return self.base / "converge"

    @property
    def ssh(self) -> Path:
        return self.base / "ssh"

    @property
    def known_hosts(self) -> Path:
        return self.ssh / "known_hosts"
