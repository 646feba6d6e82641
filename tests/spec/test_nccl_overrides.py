"""nccl_overrides reach every node's /etc/nccl.conf: a setting that would make NCCL open a file or load
a library is refused at validate, at its own line, with the reason (toolkit/tuning/variables.py)."""

from __future__ import annotations

import pytest

from toolkit.errors import SpecError
from toolkit.spec.loader import load_spec_text

SPEC = """\
name: c
provider: local
node_pools: [{name: node, instance_type: lab, count: 2}]
network:
  fabric: tcp
  admin_cidr: 127.0.0.0/8
lifecycle: {ttl: 8h}
nccl_overrides:
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, source="c.yaml")
    return caught.value.problems


def test_overrides_that_write_read_or_load_are_refused_each_at_its_line() -> None:
    text = SPEC + (
        "  NCCL_DEBUG_FILE: /etc/passwd\n"
        "  NCCL_IB_HCA: mlx5_0\n"
        "  NCCL_NET_PLUGIN: /tmp/evil.so\n"
        "  NCCL_TUNER_PLUGIN: none\n"
        "  NCCL_PROFILER_PLUGIN: example\n"
        "  NCCL_CONF_FILE: /tmp/other.conf\n"
        "  NCCL_TOPO_FILE: /tmp/topo.xml\n"
    )
    assert problems_of(text) == [
        "c.yaml:9: nccl_overrides.NCCL_DEBUG_FILE: NCCL_DEBUG_FILE names a file NCCL creates or truncates (NCCL 2.30.7 "
        "src/debug.cc:103), as root in a root job, so '/etc/passwd' could overwrite any file; gpuctl writes it only as "
        "a file name directly in /var/log/gpuctl/nccl, the directory the nccl_conf role makes for NCCL's files "
        "(letters, digits, '.', '_', '-', %h (host) and %p (process id)), e.g. /var/log/gpuctl/nccl/nccl.%h.%p.log",
        "c.yaml:11: nccl_overrides.NCCL_NET_PLUGIN: NCCL_NET_PLUGIN loads a shared library into every NCCL process "
        "(NCCL 2.30.7 src/plugin/net.cc:263); a spec cannot declare plugin software for gpuctl to install (software: "
        "pins driver, cuda, nccl and nccl_tests only), so '/tmp/evil.so' would load whatever library of that name is "
        "on the node; write none (no plugin) or leave it out, and load a plugin from the environment of a job that "
        "ships it",
        "c.yaml:13: nccl_overrides.NCCL_PROFILER_PLUGIN: NCCL_PROFILER_PLUGIN loads a shared library into every NCCL "
        "process (NCCL 2.30.7 src/plugin/profiler.cc:58); a spec cannot declare plugin software for gpuctl to install "
        "(software: pins driver, cuda, nccl and nccl_tests only), so 'example' would load whatever library of that "
        "name is on the node; write none (no plugin) or leave it out, and load a plugin from the environment of a "
        "job that ships it",
        "c.yaml:14: nccl_overrides.NCCL_CONF_FILE: NCCL_CONF_FILE names a file NCCL reads (NCCL 2.30.7 "
        "src/misc/param.cc:54); no gpuctl role installs one on the nodes, so '/tmp/other.conf' would be a file nobody "
        "vouches for; leave it out, and set it in the environment of a job that ships the file",
        "c.yaml:15: nccl_overrides.NCCL_TOPO_FILE: NCCL_TOPO_FILE names a file NCCL reads (NCCL 2.30.7 "
        "src/graph/topo.cc:1774); no gpuctl role installs one on the nodes, so '/tmp/topo.xml' would be a file nobody "
        "vouches for; leave it out, and set it in the environment of a job that ships the file",
    ]


def test_the_debug_file_in_gpuctls_log_directory_and_plugins_off_pass() -> None:
    spec = load_spec_text(SPEC + "  NCCL_DEBUG_FILE: /var/log/gpuctl/nccl/nccl.%h.%p.log\n  NCCL_NET_PLUGIN: none\n")
    assert spec.nccl_override_values() == {"NCCL_DEBUG_FILE": "/var/log/gpuctl/nccl/nccl.%h.%p.log",
                                           "NCCL_NET_PLUGIN": "none"}


def test_an_unknown_variable_that_looks_like_a_path_is_refused() -> None:
    assert problems_of(SPEC + "  NCCL_NEW_LIB: x\n  NCCL_NEW_KNOB: /opt/lib.so\n  NCCL_NEWER_KNOB: 3\n") == [
        "c.yaml:9: nccl_overrides.NCCL_NEW_LIB: NCCL_NEW_LIB is not a variable NCCL 2.30.7 or 2.26.2 reads "
        "(toolkit/tuning/data/nccl_variables.yaml lists them), and its name has LIB, so it may name a file or a "
        "library; gpuctl writes an unknown variable only as a plain value, never as a path or a library",
        "c.yaml:10: nccl_overrides.NCCL_NEW_KNOB: NCCL_NEW_KNOB is not a variable NCCL 2.30.7 or 2.26.2 reads "
        "(toolkit/tuning/data/nccl_variables.yaml lists them), and its value '/opt/lib.so' looks like a path or a "
        "library; gpuctl writes an unknown variable only as a plain value, never as a path or a library",
    ]


def test_a_name_longer_than_nccl_has_is_refused() -> None:
    # NCCL's longest variable has 48 characters; a nccl.conf line must stay within what NCCL reads as one line.
    name = "NCCL_" + "X" * 124
    assert problems_of(SPEC + f"  {name}: 1\n") == [
        f"c.yaml:9: nccl_overrides.{name}: string should have at most 128 characters (got 'NCCL_{'X' * 51}...)"
    ]
