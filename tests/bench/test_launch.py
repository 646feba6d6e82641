"""The bench launch: run order, mpirun command line, rank reports and their check."""

from __future__ import annotations

import pytest

from toolkit.bench.launch import (
    FULL,
    QUICK,
    PlannedRun,
    check_ranks,
    mpirun_argv,
    parse_rank_reports,
    remote_command,
    run_order,
)
from toolkit.bench.sweep import candidates_for, measured, plan

pytestmark = pytest.mark.unit


def test_run_order_interleaves_variants_repeat_by_repeat() -> None:
    names = [r.name for r in run_order(["all_reduce", "alltoall"], ["tuned", "default"], 2)]
    assert names == ["all_reduce-tuned-0", "all_reduce-default-0", "alltoall-tuned-0", "alltoall-default-0",
                     "all_reduce-tuned-1", "all_reduce-default-1", "alltoall-tuned-1", "alltoall-default-1"]


def test_mpirun_argv_is_fixed_words_and_numbers() -> None:
    argv = mpirun_argv(PlannedRun("all_gather", "default", 0), FULL, 24)
    assert argv == [
        "/etc/gpuctl/bench/mpirun", "-np", "24", "--map-by", "slot",
        "-x", "NCCL_DEBUG=INFO", "-x", "NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH",
        "/usr/local/libexec/gpuctl/nccl-rank", "default", "/opt/gpuctl/nccl-tests/bin/all_gather_perf",
        "-b", "8", "-e", "8589934592", "-f", "2", "-g", "1", "-w", "5", "-n", "20",
    ]
    assert QUICK.args() == ["-b", "1048576", "-e", "1073741824", "-f", "4", "-g", "1", "-w", "2", "-n", "5"]


@pytest.mark.parametrize(("key", "value"), [("NCCL_ALGO", "Ring;reboot"), ("NCCL_ALGO", "$(id)"),
                                        ("LD_PRELOAD", "/tmp/x.so"), ("NCCL_PROTO", "a b"), ("NCCL_X", "")])
def test_mpirun_argv_refuses_settings_a_shell_could_read(key: str, value: str) -> None:
    with pytest.raises(ValueError, match="refusing NCCL setting"):
        mpirun_argv(PlannedRun("all_reduce", "tuned", 0, extra_env=((key, value),)), FULL, 2)


def test_unknown_collective_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown collective"):
        mpirun_argv(PlannedRun("rm -rf", "tuned", 0), FULL, 2)


def test_remote_command_quotes_and_uses_sudo_for_a_normal_login() -> None:
    argv = ["/etc/gpuctl/bench/mpirun", "-x", "NCCL_IB_HCA=^mlx5_4", "prog"]
    assert remote_command(argv, "root") == "/etc/gpuctl/bench/mpirun -x 'NCCL_IB_HCA=^mlx5_4' prog"
    assert remote_command(argv, "ubuntu") == "sudo -n -- /etc/gpuctl/bench/mpirun -x 'NCCL_IB_HCA=^mlx5_4' prog"


_ENV = "env=NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH"
_BOUND = "bind=numa0:cpus=0-1:taskset"
_CONF = "conf=NCCL_SOCKET_IFNAME==eth1;NCCL_IB_DISABLE=1"
STDERR = "\n".join([
    "Warning: Permanently added '10.0.0.2' (ED25519) to the list of known hosts.",
    f"gpuctl-rank host=lab-node-1 rank=2 local_rank=0 gpu=0 numa=0 {_BOUND} variant=tuned {_CONF} {_ENV}",
    f"gpuctl-rank host=lab-node-0 rank=0 local_rank=0 gpu=0 numa=0 {_BOUND} variant=tuned {_CONF} {_ENV}",
    "gpuctl-rank host=lab-node-0 rank=1 local_rank=1 gpu=1 numa=1 bind=none:numa1-not-on-this-host variant=tuned "
    f"{_CONF} {_ENV}",
    "gpuctl-rank host=lab-node-1 rank=3 local_rank=1 gpu=1 numa=- bind=none:topology-names-no-numa-node variant=tuned "
    f"conf=NCCL_SOCKET_IFNAME=eth9 {_ENV};NCCL_SOCKET_IFNAME==eth1",
    "gpuctl-rank host=lab-node-1 rank=4 local_rank=2 gp",
])


def test_rank_reports_are_parsed_in_rank_order_and_a_cut_line_is_dropped() -> None:
    reports = parse_rank_reports(STDERR)
    assert [(r.rank, r.host, r.gpu, r.numa) for r in reports] == [
        (0, "lab-node-0", 0, "0"), (1, "lab-node-0", 1, "1"), (2, "lab-node-1", 0, "0"), (3, "lab-node-1", 1, "-")]
    assert reports[0].env == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET,GRAPH"}
    # The environment wins over nccl.conf, as in NCCL.
    assert reports[3].settings["NCCL_SOCKET_IFNAME"] == "=eth1"


def test_check_ranks_names_every_difference() -> None:
    reports = parse_rank_reports(STDERR)
    check = check_ranks(reports, PlannedRun("all_reduce", "tuned", 0),
                        slots={"lab-node-0": 2, "lab-node-1": 3},
                        numa={"lab-node-0": ["0", "1"], "lab-node-1": ["0", "-", "-"]},
                        tuned={"lab-node-0": {"NCCL_SOCKET_IFNAME": "=eth1", "NCCL_IB_DISABLE": "1"},
                               "lab-node-1": {"NCCL_SOCKET_IFNAME": "=eth1", "NCCL_IB_DISABLE": "1"}})
    assert check.hosts == {"lab-node-0": 2, "lab-node-1": 2}
    assert check.problems == [
        "4 of 5 ranks reported (one per GPU); a rank that did not start or died before its report is missing",
        "lab-node-1: 2 ranks, expected 3 (one per GPU)",
        "rank 1 (lab-node-0 GPU 1): not bound to NUMA node 1 (none:numa1-not-on-this-host)",
        "rank 3 (lab-node-1 GPU 1): NCCL_IB_DISABLE=None, gpuctl wrote '1'",
    ]


def test_default_variant_must_not_see_nccl_conf() -> None:
    line = ("gpuctl-rank host=n0 rank=0 local_rank=0 gpu=0 numa=- bind=none:x variant=default "
            "conf=NCCL_IB_HCA=mlx5_0 env=NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH")
    check = check_ranks(parse_rank_reports(line), PlannedRun("all_reduce", "default", 0), {"n0": 1}, {"n0": ["-"]},
                        {"n0": {"NCCL_IB_HCA": "mlx5_0"}})
    assert check.problems == ["rank 0 (n0 GPU 0): the default variant could see /etc/nccl.conf (NCCL_IB_HCA=mlx5_0)"]
    hidden = line.replace("conf=NCCL_IB_HCA=mlx5_0", "conf=none")
    assert check_ranks(parse_rank_reports(hidden), PlannedRun("all_reduce", "default", 0), {"n0": 1},
                       {"n0": ["-"]}, {"n0": {"NCCL_IB_HCA": "mlx5_0"}}).ok


def test_sweep_candidates_follow_what_nccl_can_choose() -> None:
    assert list(candidates_for("all_reduce", rdma=True)) == [
        "ring-simple", "ring-ll128", "ring-ll", "tree-simple", "tree-ll128", "qps-2", "buffsize-8m"]
    assert list(candidates_for("all_gather", rdma=False)) == ["ring-simple", "ring-ll128", "ring-ll", "buffsize-8m"]
    assert list(candidates_for("alltoall", rdma=True)) == ["qps-2", "buffsize-8m"]


def test_sweep_pairs_each_candidate_with_a_baseline_next_to_it() -> None:
    runs = plan(["alltoall"], 2, rdma=True)
    assert [r.name for r in runs] == [
        "alltoall-baseline-for-qps-2-0", "alltoall-qps-2-0", "alltoall-baseline-for-buffsize-8m-0",
        "alltoall-buffsize-8m-0", "alltoall-baseline-for-qps-2-1", "alltoall-qps-2-1",
        "alltoall-baseline-for-buffsize-8m-1", "alltoall-buffsize-8m-1"]
    assert runs[1].extra_env == (("NCCL_IB_QPS_PER_CONNECTION", "2"),)


def test_measured_drops_a_pair_with_a_failed_side() -> None:
    busbw = {"qps-2": {0: {8: 1.0}, 1: {8: 2.0}}, "baseline-for-qps-2": {1: {8: 3.0}}}
    found = {c.name: c for c in measured("alltoall", True, busbw)}
    assert found["qps-2"].runs == [{8: 2.0}]
    assert found["qps-2"].default_runs == [{8: 3.0}]
    assert found["buffsize-8m"].runs == []
