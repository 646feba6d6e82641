"""The operating systems gpuctl configures, and the Python Ansible runs its modules with on each.

Ansible's modules run on the node, under the node's Python; each ansible-core line has a minimum
target Python (`_PY_MIN` / `_PY3_MIN` in its `module_utils/basic.py`). The EL 8 family images
(Alibaba Cloud Linux 3, TencentOS Server 3) have Python 3.6 as their system Python, and dnf's Python
bindings exist for that one only, so `ansible.builtin.dnf` runs there only with an ansible-core that
still drives 3.6: 2.16 (2.17 needs 3.7, 2.18 and 2.19 need 3.8; a dnf module respawned under
platform-python then fails, ansible/ansible#82068, and newer ones refuse it at the probe,
ansible/ansible#83662). pyproject.toml pins ansible-core accordingly; tests/playbooks/
test_targets.py fails when the installed ansible-core cannot drive one of these.

Each row: the image alias of the spec (NodePool.image), the OS, the system Python (major, minor),
and the sources read on 2026-12-02.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    image: str  # the spec's image alias
    os: str
    python: tuple[int, int]  # the system Python Ansible's discovery finds (and dnf's bindings need)
    sources: tuple[str, ...]


TARGETS: tuple[Target, ...] = (
    Target("alinux_3", "Alibaba Cloud Linux 3 (EL 8 compatible)", (3, 6), (
        # "Python 3.6 and Python 2.7 are supported", with "compatible with CentOS 8, RHEL 8".
        "AlibabaCloudDocs/ecs@322eaab82e866a494eeaddb0de02bab1978692d1:"
        "intl.en-US/Images/Alibaba Cloud Linux 3/Release notes.md:31",
        # On EL 8, dnf's bindings are built for platform-python 3.6 only.
        "https://github.com/ansible/ansible/issues/71668",
    )),
    Target("tencentos_3", "TencentOS Server 3 (EL 8 based)", (3, 6), (
        # A real setup run on TencentOS 3.1: "discovered_interpreter_python": "/usr/bin/python3.6".
        "https://github.com/ansible/ansible/pull/76459",
        "https://github.com/nodejs/build/pull/4124",  # python3-dnf on EL 8: system Python 3.6 only
    )),
    Target("ubuntu_22_04", "Ubuntu 22.04", (3, 10), ("https://packages.ubuntu.com/jammy/python3",)),
    Target("ubuntu_24_04", "Ubuntu 24.04", (3, 12), ("https://packages.ubuntu.com/noble/python3",)),
    Target("debian_12", "Debian 12 (the local lab's nodes)", (3, 11),
           ("https://packages.debian.org/bookworm/python3",)),
)
