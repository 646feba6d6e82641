"""How `gpuctl bench` launches nccl-tests: the run order, the mpirun command line, the rank reports.

Nothing here touches a node; `toolkit.bench.run` executes what this module builds.

- Order: variants interleaved, repeat by repeat (tuned, default, tuned, default, ...), so that a
  slow drift of the cluster (another tenant, a warming GPU) hits both variants alike and the A/B
  comparison (`toolkit.bench.compare`) pairs runs that ran next to each other.
- Command: the nccl_tests role writes `/etc/gpuctl/bench/mpirun` on the launch node (hostfile with
  one slot per GPU, the cluster-internal key, MPI on TCP only). gpuctl adds the rank count, one rank
  per slot, `NCCL_DEBUG=INFO` so each output carries the log check-log reads, and the rank wrapper,
  which binds the rank to its GPU's NUMA node and hides /etc/nccl.conf from the default variant.
  Every token is built here from fixed words and numbers: no spec value reaches the remote shell.
- Ranks: each rank prints one `gpuctl-rank ...` line on stderr (its host, GPU, binding, variant,
  the NCCL settings it received); `check_ranks` compares them with what was asked.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # results pulls in pydantic and the busbw model: not for `gpuctl --help`
    from toolkit.bench.results import Variant

# The binaries nccl-tests builds, without `_perf`: what `gpuctl bench` runs by default.
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
MPIRUN = "/etc/gpuctl/bench/mpirun"
RANK_WRAPPER = "/usr/local/libexec/gpuctl/nccl-rank"
BIN_DIR = "/opt/gpuctl/nccl-tests/bin"
# INIT and NET: the transport and NIC lines check-log reads; GRAPH: NCCL's topology print (NIC
# rates for the busbw model); ENV: which settings NCCL took from where.
DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET,GRAPH"}
_ENV_NAME = re.compile(r"NCCL_[A-Z0-9_]+")
_ENV_VALUE = re.compile(r"[A-Za-z0-9_.,:=^/+-]{1,200}")


@dataclass(frozen=True)
class Sweep:
    """nccl-tests' size sweep and iteration counts (-b -e -f -w -n)."""

    name: str
    min_bytes: int
    max_bytes: int
    factor: int
    warmup: int
    iters: int
    collectives: tuple[str, ...]
    timeout_s: int  # one run; a hung rank is killed after this

    def args(self) -> list[str]:
        return ["-b", str(self.min_bytes), "-e", str(self.max_bytes), "-f", str(self.factor),
                "-g", "1", "-w", str(self.warmup), "-n", str(self.iters)]


# The default set of the issue: 8 B to 8 GiB, doubling. 5 warm-up + 20 timed iterations per size
# is nccl-tests' own default count (-n 20) with a warm-up past NCCL's lazy connection setup.
FULL = Sweep("full", 8, 8 << 30, 2, 5, 20, COLLECTIVES, timeout_s=900)
# A one-minute check that the fabric carries traffic: all_reduce only, 1 MiB to 1 GiB by 4x.
QUICK = Sweep("quick", 1 << 20, 1 << 30, 4, 2, 5, ("all_reduce",), timeout_s=180)


@dataclass(frozen=True)
class PlannedRun:
    collective: str
    variant: Variant
    repeat: int
    # Settings added on top of the variant (autotune's candidates); names and values are checked.
    extra_env: tuple[tuple[str, str], ...] = ()
    label: str = ""  # autotune: the candidate's name

    @property
    def name(self) -> str:
        """The output file's stem: all_reduce-tuned-0, all_reduce-ring-ll128-1 ..."""
        return f"{self.collective}-{self.label or self.variant}-{self.repeat}"


def run_order(collectives: Sequence[str], variants: Sequence[Variant], repeats: int) -> list[PlannedRun]:
    """Repeat by repeat, collective by collective, the variants side by side."""
    return [PlannedRun(collective, variant, repeat)
            for repeat in range(repeats) for collective in collectives for variant in variants]


def _checked_env(pairs: Mapping[str, str] | Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    items = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
    for key, value in items:
        if not _ENV_NAME.fullmatch(key) or not _ENV_VALUE.fullmatch(value):
            raise ValueError(f"refusing NCCL setting {key!r}={value!r} on an mpirun command line")
    return items


def mpirun_argv(run: PlannedRun, sweep: Sweep, ranks: int) -> list[str]:
    """The launch node's command for one run: `ranks` ranks, one per hostfile slot, in slot order."""
    if run.collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {run.collective!r}")
    env = _checked_env([*DEBUG_ENV.items(), *run.extra_env])
    argv = [MPIRUN, "-np", str(ranks), "--map-by", "slot"]
    for key, value in env:
        argv += ["-x", f"{key}={value}"]
    return [*argv, RANK_WRAPPER, run.variant, f"{BIN_DIR}/{run.collective}_perf", *sweep.args()]


def remote_command(argv: Sequence[str], ssh_user: str) -> str:
    """One shell line for ssh: quoted, and through `sudo -n` when the login is not root (mpirun
    runs as root: the default variant's private mount namespace needs it)."""
    line = shlex.join(argv)
    return line if ssh_user == "root" else f"sudo -n -- {line}"


# ---- rank reports -------------------------------------------------------------------------------

_RANK_LINE = re.compile(r"^gpuctl-rank (?P<fields>.*)$")
_FIELD = re.compile(r"(\w+)=(\S*)")


@dataclass(frozen=True)
class RankReport:
    host: str
    rank: int
    local_rank: int
    gpu: int
    numa: str  # "0", "1", ... or "-" where the topology names none
    bind: str  # numa0:cpus=0-47:numactl, none:<why>
    variant: str
    conf: list[str]  # KEY=VALUE lines of /etc/nccl.conf the rank could see; [] when none
    env: dict[str, str]  # the rank's NCCL_* environment

    @property
    def settings(self) -> dict[str, str]:
        """What NCCL reads: the environment first, then the visible nccl.conf (NCCL never lets the
        file override a variable that is already set)."""
        merged = dict(line.split("=", 1) for line in self.conf if "=" in line)
        merged.update(self.env)
        return merged


def _pairs(text: str) -> list[str]:
    # The wrapper joins KEY=VALUE pairs with ';' (values such as NCCL_IB_HCA lists hold commas).
    return [] if text in ("", "none", "hidden") else [p for p in text.split(";") if p]


def parse_rank_reports(stderr: str) -> list[RankReport]:
    """The `gpuctl-rank` lines of a run's stderr, in rank order; other lines are ignored."""
    reports: list[RankReport] = []
    for line in stderr.splitlines():
        match = _RANK_LINE.match(line.strip())
        if match is None:
            continue
        fields = dict(_FIELD.findall(match.group("fields")))
        try:
            reports.append(RankReport(
                host=fields["host"], rank=int(fields["rank"]), local_rank=int(fields["local_rank"]),
                gpu=int(fields["gpu"]), numa=fields.get("numa", "-"), bind=fields.get("bind", ""),
                variant=fields.get("variant", ""), conf=_pairs(fields.get("conf", "")),
                env=dict(p.split("=", 1) for p in _pairs(fields.get("env", "")) if "=" in p),
            ))
        except (KeyError, ValueError):
            continue  # a line cut by a dying rank: the count check below notices the missing rank
    return sorted(reports, key=lambda r: r.rank)


@dataclass
class RankCheck:
    problems: list[str] = field(default_factory=list)
    hosts: dict[str, int] = field(default_factory=dict)  # ranks per host

    @property
    def ok(self) -> bool:
        return not self.problems


def check_ranks(reports: Sequence[RankReport], run: PlannedRun, slots: Mapping[str, int],
                numa: Mapping[str, Sequence[str]], tuned: Mapping[str, Mapping[str, str]]) -> RankCheck:
    """Did every rank start where asked, bound as the topology says, with the settings of its variant?

    `slots`: host -> GPUs; `numa`: host -> NUMA node per GPU ("-" for none); `tuned`: host -> the
    settings gpuctl wrote in that node's nccl.conf.
    """
    check = RankCheck(hosts=dict(Counter(r.host for r in reports)))
    expected = sum(slots.values())
    if len(reports) != expected:
        check.problems.append(f"{len(reports)} of {expected} ranks reported (one per GPU); a rank that "
                              "did not start or died before its report is missing")
    for host, count in slots.items():
        if check.hosts.get(host, 0) != count:
            check.problems.append(f"{host}: {check.hosts.get(host, 0)} ranks, expected {count} (one per GPU)")
    for extra in sorted(set(check.hosts) - set(slots)):
        check.problems.append(f"{extra}: ranks on a host that is not a node of the cluster")
    for report in reports:
        where = f"rank {report.rank} ({report.host} GPU {report.gpu})"
        if report.variant != run.variant:
            check.problems.append(f"{where}: ran as {report.variant!r}, asked {run.variant!r}")
        want = numa.get(report.host, [])
        want_numa = want[report.gpu] if report.gpu < len(want) else "-"
        if report.numa != want_numa:
            check.problems.append(f"{where}: NUMA node {report.numa}, the topology says {want_numa}")
        elif want_numa != "-" and not report.bind.startswith(f"numa{want_numa}:"):
            check.problems.append(f"{where}: not bound to NUMA node {want_numa} ({report.bind})")
        for key, value in DEBUG_ENV.items():
            if report.env.get(key) != value:
                check.problems.append(f"{where}: {key} is {report.env.get(key)!r}, not {value!r}")
        for key, value in run.extra_env:
            if report.env.get(key) != value:
                check.problems.append(f"{where}: {key} is {report.env.get(key)!r}, not {value!r}")
        if run.variant == "default" and report.conf:
            check.problems.append(f"{where}: the default variant could see /etc/nccl.conf "
                                  f"({', '.join(report.conf[:3])})")
        if run.variant == "tuned":
            seen = report.settings
            for key, value in tuned.get(report.host, {}).items():
                if key in dict(run.extra_env):
                    continue
                if seen.get(key) != value:
                    check.problems.append(f"{where}: {key}={seen.get(key)!r}, gpuctl wrote {value!r}")
    return check
