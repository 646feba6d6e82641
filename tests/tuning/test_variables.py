"""Which NCCL settings gpuctl writes into every node's nccl.conf (toolkit/tuning/variables.py).

The table is data read from NCCL's source (toolkit/tuning/data/nccl_variables.yaml); these tests
write the expected kinds, places and messages out literally."""

from __future__ import annotations

import pytest

from toolkit.tuning import tables
from toolkit.tuning.variables import LOG_DIR, setting_problem, table, unknown_note

PLUGIN_TAIL = ("a spec cannot declare plugin software for gpuctl to install (software: pins driver, cuda, nccl and "
               "nccl_tests only), so {value} would load whatever library of that name is on the node; {fix}, and "
               "load a plugin from the environment of a job that ships it")
READ_TAIL = ("no gpuctl role installs one on the nodes, so {value} would be a file nobody vouches for; leave it out, "
             "and set it in the environment of a job that ships the file")
WRITE_TAIL = ("as root in a root job, so {value} could overwrite any file; gpuctl writes it only as a file name "
              "directly in /var/log/gpuctl/nccl, the directory the nccl_conf role makes for NCCL's files ({allowed}), "
              "e.g. {example}")
UNKNOWN_TAIL = ("is not a variable NCCL 2.30.7 or 2.26.2 reads (toolkit/tuning/data/nccl_variables.yaml lists them), "
                "and {why}; gpuctl writes an unknown variable only as a plain value, never as a path or a library")


def test_the_table_names_what_opens_a_file_or_loads_a_library_with_its_line_in_nccl() -> None:
    rows = table().variables
    assert table().version == "2.30.7"
    opening = {name: (row.kind, row.read) for name, row in rows.items() if row.kind != "value"}
    assert opening == {
        "NCCL_CONF_FILE": ("read-path", "src/misc/param.cc:54"),
        "NCCL_TOPO_FILE": ("read-path", "src/graph/topo.cc:1774"),
        "NCCL_GRAPH_FILE": ("read-path", "src/graph/search.cc:1111"),
        "NCCL_TUNER_CONFIG_FILE": ("read-path", "plugins/tuner/example/plugin.c:335"),
        "NCCL_DEBUG_FILE": ("write-path", "src/debug.cc:103"),
        "NCCL_TOPO_DUMP_FILE": ("write-path", "src/init.cc:1135"),
        "NCCL_GRAPH_DUMP_FILE": ("write-path", "src/graph/search.cc:1355"),
        "NCCL_PROFILE_DUMP_FILE": ("write-path", "plugins/profiler/example/plugin.cc:343"),
        "NCCL_INSPECTOR_DUMP_DIR": ("write-path", "plugins/profiler/inspector/inspector.cc:464"),
        "NCCL_NET_PLUGIN": ("plugin", "src/plugin/net.cc:263"),
        "NCCL_TUNER_PLUGIN": ("plugin", "src/plugin/tuner.cc:58"),
        "NCCL_PROFILER_PLUGIN": ("plugin", "src/plugin/profiler.cc:58"),
        "NCCL_ENV_PLUGIN": ("plugin", "src/plugin/env.cc:42"),
        "NCCL_GIN_PLUGIN": ("plugin", "src/plugin/gin.cc:203"),
        "NCCL_RMA_PLUGIN": ("plugin", "src/plugin/rma.cc:166"),
        "NCCL_IBVERBS_LIB": ("plugin", "src/misc/ibvsymbols.cc:78"),
    }
    assert not rows["NCCL_IBVERBS_LIB"].none_disables  # dlopen of the name, no "none" (ibvsymbols.cc:78-84)
    assert rows["NCCL_IB_HCA"].kind == "value"
    assert rows["NCCL_IB_HCA"].doc == 174
    assert rows["NCCL_SHM_USE_CUDA_MEMCPY"].read == "v2.26.2 src/transport/shm.cc:66"  # gone in 2.30
    assert len(rows) == 285


def test_every_value_gpuctl_itself_sets_passes() -> None:
    """The vendor profiles (NCCL_NET_PLUGIN none among them) and NCCL's defaults stay writable."""
    for profile in tables.vendor_profiles():
        for item in profile.published:
            assert setting_problem(item.name, item.value) is None, (profile.id, item.name)
    for row in tables.nccl_default_rows():
        assert setting_problem(row.name, row.value) is None, row.name


@pytest.mark.parametrize("value", ["none", "NONE", "None"])
def test_a_plugin_may_only_be_turned_off(value: str) -> None:
    assert setting_problem("NCCL_NET_PLUGIN", value) is None  # strcasecmp(value, "none"): src/plugin/net.cc:266
    assert setting_problem("NCCL_TUNER_PLUGIN", value) is None


@pytest.mark.parametrize(("name", "value", "where", "fix"), [
    ("NCCL_NET_PLUGIN", "/tmp/evil.so", "src/plugin/net.cc:263", "write none (no plugin) or leave it out"),
    ("NCCL_NET_PLUGIN", "tccl", "src/plugin/net.cc:263", "write none (no plugin) or leave it out"),
    ("NCCL_TUNER_PLUGIN", "example", "src/plugin/tuner.cc:58", "write none (no plugin) or leave it out"),
    ("NCCL_PROFILER_PLUGIN", "libx.so", "src/plugin/profiler.cc:58", "write none (no plugin) or leave it out"),
    ("NCCL_ENV_PLUGIN", "", "src/plugin/env.cc:42", "write none (no plugin) or leave it out"),
    ("NCCL_IBVERBS_LIB", "none", "src/misc/ibvsymbols.cc:78", "leave it out"),
])
def test_a_plugin_that_loads_code_is_refused(name: str, value: str, where: str, fix: str) -> None:
    assert setting_problem(name, value) == (
        f"{name} loads a shared library into every NCCL process (NCCL 2.30.7 {where}); "
        + PLUGIN_TAIL.format(value=repr(value), fix=fix))


@pytest.mark.parametrize(("name", "value", "where"), [
    ("NCCL_TOPO_FILE", "/tmp/topo.xml", "src/graph/topo.cc:1774"),
    ("NCCL_GRAPH_FILE", "graph.xml", "src/graph/search.cc:1111"),
    ("NCCL_CONF_FILE", "/home/me/.nccl.conf", "src/misc/param.cc:54"),
    ("NCCL_TOPO_FILE", f"{LOG_DIR}/topo.xml", "src/graph/topo.cc:1774"),
])
def test_a_file_nccl_reads_is_refused(name: str, value: str, where: str) -> None:
    assert setting_problem(name, value) == (
        f"{name} names a file NCCL reads (NCCL 2.30.7 {where}); " + READ_TAIL.format(value=repr(value)))


@pytest.mark.parametrize("value", [
    "/etc/passwd", "/var/log/gpuctl/nccl/../../../etc/passwd", "/var/log/gpuctl/nccl//x.%p",
    "/var/log/gpuctl/nccl", "/var/log/gpuctl/nccl/", "/var/log/gpuctl/nccl/sub/n.%p", "nccl.%h.%p",
    "/var/log/gpuctl/nccl/a b.%p", "/var/log/gpuctl/nccl/$(id).%p", "/var/log/gpuctl/nccl/x.%s.%p",
])
def test_the_debug_file_goes_only_into_gpuctls_log_directory(value: str) -> None:
    assert setting_problem("NCCL_DEBUG_FILE", value) == (
        "NCCL_DEBUG_FILE names a file NCCL creates or truncates (NCCL 2.30.7 src/debug.cc:103), "
        + WRITE_TAIL.format(value=repr(value), allowed="letters, digits, '.', '_', '-', %h (host) and %p (process id)",
                            example="/var/log/gpuctl/nccl/nccl.%h.%p.log"))


def test_the_debug_file_needs_the_process_id_and_may_have_the_host() -> None:
    assert setting_problem("NCCL_DEBUG_FILE", "/var/log/gpuctl/nccl/nccl.%h.%p.log") is None
    assert setting_problem("NCCL_DEBUG_FILE", "/var/log/gpuctl/nccl/run-7_%p%%") is None
    assert setting_problem("NCCL_DEBUG_FILE", "/var/log/gpuctl/nccl/nccl.%h.log") == (
        "NCCL_DEBUG_FILE '/var/log/gpuctl/nccl/nccl.%h.log' has no %p: every NCCL process on the node would open the "
        "same file and truncate what the others wrote; put the process id in the name, e.g. "
        "/var/log/gpuctl/nccl/nccl.%h.%p.log")


def test_a_dump_file_goes_into_the_log_directory_as_a_plain_name() -> None:
    assert setting_problem("NCCL_TOPO_DUMP_FILE", "/var/log/gpuctl/nccl/topo.xml") is None
    assert setting_problem("NCCL_GRAPH_DUMP_FILE", "/tmp/graph.xml") == (
        "NCCL_GRAPH_DUMP_FILE names a file NCCL creates or truncates (NCCL 2.30.7 src/graph/search.cc:1355), "
        + WRITE_TAIL.format(value="'/tmp/graph.xml'", allowed="letters, digits, '.', '_', '-'",
                            example="/var/log/gpuctl/nccl/graph_dump_file.xml"))


def test_plain_values_of_known_variables_are_written_as_given() -> None:
    assert setting_problem("NCCL_IB_HCA", "=mlx5_0,mlx5_1") is None
    assert setting_problem("NCCL_IB_ADDR_RANGE", "10.0.0.0/16") is None  # a '/' in a value NCCL opens nothing with
    assert setting_problem("NCCL_DEBUG_TIMESTAMP_FORMAT", "[%F %T] ") is None
    assert unknown_note("NCCL_IB_HCA") is None


def test_an_unknown_variable_is_a_plain_value_or_refused() -> None:
    assert setting_problem("NCCL_FUTURE_KNOB", "4") is None
    assert unknown_note("NCCL_FUTURE_KNOB") == (
        "NCCL_FUTURE_KNOB is not a variable NCCL 2.30.7 or 2.26.2 reads; written as a plain value (NCCL ignores a "
        "variable it does not know)")
    assert setting_problem("NCCL_FUTURE_DUMP_FILE", "1") == "NCCL_FUTURE_DUMP_FILE " + UNKNOWN_TAIL.format(
        why="its name has FILE, so it may name a file or a library")
    assert setting_problem("NCCL_PLUGIN_P2P", "ucx") == "NCCL_PLUGIN_P2P " + UNKNOWN_TAIL.format(
        why="its name has PLUGIN, so it may name a file or a library")
    for value in ("/opt/x", "libfoo.so", "libfoo.so.1", "~/x", "a\\b"):
        assert setting_problem("NCCL_FUTURE_KNOB", value) == "NCCL_FUTURE_KNOB " + UNKNOWN_TAIL.format(
            why=f"its value {value!r} looks like a path or a library"), value
