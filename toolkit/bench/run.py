"""`gpuctl bench`: prepare the nodes, run nccl-tests across the cluster, write one run directory.

1. Facts per node from what configure left in the cluster directory: the GPUs and their NUMA nodes
   (the node's gathered topology) and the settings gpuctl wrote (its explain.json). A node that was
   never configured is refused: there is nothing tuned to measure.
2. The bench playbook (templates/bench.yml.j2, role nccl_tests) builds nccl-tests with MPI on GPU
   nodes (stand-ins replaying real outputs on lab nodes) and lets the launch node start ranks.
3. Each planned run (`toolkit.bench.launch`) is one mpirun on the launch node over ssh; its stdout
   (rank 0's table and every rank's NCCL INFO lines) and stderr (the rank reports) are kept as
   files in the run directory.
4. Each output is parsed, its NCCL log checked (check-log), its peak judged against the busbw model
   and its rank reports checked; everything goes into results.json with the price of the cluster.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from toolkit.bench.launch import (
    PlannedRun,
    RankCheck,
    RankReport,
    Sweep,
    check_ranks,
    mpirun_argv,
    parse_rank_reports,
    remote_command,
)
from toolkit.bench.results import (
    FILE_NAME,
    LaunchCheck,
    LogCheck,
    Price,
    RankPlacement,
    Results,
    RunMeta,
    Series,
    Setting,
    dump,
    series_from_result,
)
from toolkit.errors import CheckFailed, GpuctlError, ParseError, UsageError
from toolkit.files import open_private, size_text, write_atomic
from toolkit.topology.reading import LOG_LIMIT

# A run's output is read at most this far: the same bound as a log given to check-log (reading.py).
OUTPUT_LIMIT = LOG_LIMIT
TAIL_BYTES = 64 * 1024
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL

if TYPE_CHECKING:
    from toolkit.paths import Paths
    from toolkit.providers.base import ClusterOutputs, NodeOutput
    from toolkit.spec.models import ClusterSpec
    from toolkit.topology.model import Topology
    from toolkit.tuning.config import NcclConfig

Progress = Callable[[str], None]
BENCH_PLAYBOOK = "bench.yml"
BENCH_VARS = "bench-vars.yml"
REPLAYED = ("lab: every output was replayed by stand-ins from real nccl-tests captures of other machines "
            "(examples/captures/README.md); nothing was measured on this cluster, and no gate is applied")


@dataclass
class NodeFacts:
    name: str
    address: str  # the private address mpirun and the ranks' ssh use
    gpu_numa: list[str]  # per GPU: its NUMA node, or "-"
    tuned: dict[str, str]  # the settings gpuctl wrote in the node's nccl.conf
    config: NcclConfig | None
    topology: Topology | None

    @property
    def slots(self) -> int:
        return len(self.gpu_numa)


@dataclass
class Executed:
    run: PlannedRun
    command: str
    stdout: Path
    stderr: Path
    seconds: float
    rc: int | None  # None: killed at the timeout
    reports: list[RankReport] = field(default_factory=list)  # the `gpuctl-rank` lines of its stderr
    check: RankCheck = field(default_factory=RankCheck)


def node_facts(outputs: ClusterOutputs, paths: Paths) -> list[NodeFacts]:
    """Every node's GPUs, NUMA nodes and tuned settings, from its last configure run."""
    from toolkit.configure.decide import load_explained
    from toolkit.topology.detect import detect_paths

    facts: list[NodeFacts] = []
    for node in outputs.nodes:
        bundle = paths.bundles / node.name
        config = load_explained(paths.nccl / node.name)
        if not bundle.is_dir() or config is None:
            from toolkit import hints

            raise UsageError(f"{node.name} has no gathered topology or tuned settings in {paths.base}: "
                             "it was never configured",
                             hint="configure the cluster first, then bench it: "
                                  f"`{hints.spec_command(outputs.cluster, 'configure')}`")
        try:
            topology = detect_paths([bundle])
        except GpuctlError as error:
            raise ParseError(f"{node.name}: its gathered topology cannot be read again ({error.message})",
                             source=str(bundle)) from None
        gpus = sorted(topology.gpus, key=lambda g: g.index)
        if not gpus:
            raise UsageError(f"{node.name}: its topology shows no GPU, so there is nothing for nccl-tests "
                             "to run on")
        facts.append(NodeFacts(
            name=node.name, address=node.private_ip,
            gpu_numa=[str(g.numa) if g.numa is not None else "-" for g in gpus],
            tuned={s.name: s.value for s in config.pinned()}, config=config, topology=topology,
        ))
    return facts


def standins(replay_dir: Path | None) -> list[str]:
    """The binaries a lab replay bundle has an output for (`<binary>.txt`)."""
    from toolkit.bench.launch import COLLECTIVES

    if replay_dir is None:
        return []
    return [f"{c}_perf" for c in COLLECTIVES if (replay_dir / f"{c}_perf.txt").is_file()]


def write_playbook(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths, facts: Sequence[NodeFacts],
                   replay_dir: Path | None) -> Path:
    """The bench playbook and its variables file beside the inventory configure wrote."""
    from toolkit.configure import write_files
    from toolkit.configure.render import _InventoryDumper, _unsafe, render_playbook

    write_files(spec, outputs, paths)  # the inventory, as configure would write it now
    variables: dict[str, Any] = {
        "gpuctl_bench_launch_node": facts[0].name,
        "gpuctl_bench_replay_dir": str(replay_dir) if replay_dir else "",
        "gpuctl_bench_standins": standins(replay_dir),
        "nccl_tests_version": spec.software.nccl_tests,
        # Per node, looked up by the role through hostvars-like access below.
        "gpuctl_bench_nodes": {f.name: {"address": f.address, "slots": f.slots, "gpu_numa": f.gpu_numa}
                               for f in facts},
    }
    header = "---\n# Written by gpuctl bench: data only, every string !unsafe.\n"
    # In the cluster's folder of the gpuctl home: written whole, never through a link (toolkit.files).
    write_atomic(paths.base / BENCH_VARS,
                 header + yaml.dump(_unsafe(variables), Dumper=_InventoryDumper, sort_keys=False, width=200))
    playbook = paths.base / BENCH_PLAYBOOK
    write_atomic(playbook, render_playbook(outputs, paths, ["nccl_tests"], template="bench.yml.j2"))
    return playbook


def prepare(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths, facts: Sequence[NodeFacts],
            replay_dir: Path | None, progress: Progress) -> None:
    from toolkit.configure.ansible_run import run_playbook

    playbook = write_playbook(spec, outputs, paths, facts, replay_dir)
    result = run_playbook(playbook, paths.inventory, [n.name for n in outputs.nodes], progress, config=paths.config)
    if not result.ok:
        failed = ", ".join(f"{name} ({node.failed_task}: {node.message})" for name, node in result.nodes.items()
                           if not node.ok) or f"ansible-playbook exited {result.rc}"
        raise CheckFailed(f"preparing nccl-tests failed on {failed}",
                          hint=f"fix the cause and run the bench again; by hand: cd {paths.base} && "
                               f"ansible-playbook -i inventory.yml {BENCH_PLAYBOOK}")


def execute(outputs: ClusterOutputs, launch: NodeOutput, runs: Sequence[PlannedRun], sweep: Sweep,
            facts: Sequence[NodeFacts], run_dir: Path, progress: Progress) -> list[Executed]:
    """Run each planned run in order on the launch node; keep its stdout and stderr as files."""
    from toolkit.paths import Paths
    from toolkit.secrets import child_env
    from toolkit.ssh import ssh_argv

    known_hosts = outputs.known_hosts or Paths.of(outputs.cluster).known_hosts
    ranks = sum(f.slots for f in facts)
    slots = {f.name: f.slots for f in facts}
    numa = {f.name: f.gpu_numa for f in facts}
    tuned = {f.name: f.tuned for f in facts}
    done: list[Executed] = []
    for index, run in enumerate(runs, 1):
        command = remote_command(mpirun_argv(run, sweep, ranks), launch.ssh_user)
        stdout, stderr = run_dir / f"{run.name}.txt", run_dir / f"{run.name}.err"
        progress(f"[{index}/{len(runs)}] {run.collective} {run.label or run.variant} #{run.repeat}: "
                 f"{ranks} ranks on {len(facts)} nodes")
        started = time.monotonic()
        argv = ssh_argv(outputs, launch, [command], batch=True, known_hosts=known_hosts)
        # New files (O_EXCL, no link followed) in the run directory bench just created.
        with os.fdopen(open_private(stdout, _NEW), "wb") as out, os.fdopen(open_private(stderr, _NEW), "wb") as err:
            process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=child_env())
            try:
                rc: int | None = process.wait(timeout=sweep.timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                rc = None
            except BaseException:
                process.kill()
                process.wait()
                raise
        executed = Executed(run=run, command=command, stdout=stdout, stderr=stderr,
                            seconds=time.monotonic() - started, rc=rc)
        executed.reports = parse_rank_reports(node_output(stderr)[0])
        executed.check = check_ranks(executed.reports, run, slots, numa, tuned)
        done.append(executed)
        status = "timed out" if rc is None else f"exit {rc}"
        progress(f"    {status} after {executed.seconds:.1f} s; ranks "
                 + ("ok" if executed.check.ok else f"{len(executed.check.problems)} problem(s)"))
    return done


# ---- results ------------------------------------------------------------------------------------

def node_output(path: Path) -> tuple[str, bool]:
    """What a run printed (the launch node's mpirun, through ssh), at most OUTPUT_LIMIT bytes of it,
    and whether it was cut there: a node that floods its output cannot make bench read without end."""
    try:
        with path.open("rb") as handle:
            data = handle.read(OUTPUT_LIMIT + 1)
    except OSError:
        return "", False
    return data[:OUTPUT_LIMIT].decode(errors="replace"), len(data) > OUTPUT_LIMIT


def _tail(path: Path, lines: int = 5) -> list[str]:
    try:
        with path.open("rb") as handle:  # the end only: the lines before an exit say why
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - TAIL_BYTES))
            text = handle.read(TAIL_BYTES).decode(errors="replace")
    except OSError:
        return []
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("gpuctl-rank ")]
    return kept[-lines:]


def _launch_check(executed: Executed) -> LaunchCheck:
    return LaunchCheck(ok=executed.check.ok, problems=executed.check.problems,
                       ranks=[RankPlacement(host=r.host, rank=r.rank, gpu=r.gpu, numa=r.numa, bind=r.bind)
                              for r in executed.reports])


def series_of(executed: Executed, run_dir: Path, topology: Topology | None) -> Series:
    """One executed run as a results.json series: parsed, its log checked, its peak judged."""
    return _series_and_version(executed, run_dir, topology)[0]


def _series_and_version(executed: Executed, run_dir: Path, topology: Topology | None
                        ) -> tuple[Series, str | None]:
    """`series_of`, and the NCCL version its output printed (None when it printed none)."""
    from toolkit.bench.expectation import judge_run
    from toolkit.bench.nccl_tests import looks_like_nccl_tests, parse_nccl_tests
    from toolkit.topology.log_check import judge_log, rails_by_host
    from toolkit.topology.nccl_log import looks_like_nccl_log, parse_nccl_log

    run = executed.run
    source = executed.stdout.relative_to(run_dir).as_posix()
    text, cut = node_output(executed.stdout)
    launch = _launch_check(executed)
    problems: list[str] = []
    if cut:
        problems.append(f"its output passed {size_text(OUTPUT_LIMIT)}: only the first {size_text(OUTPUT_LIMIT)} "
                        "were read")
    if executed.rc is None:
        problems.append("killed at the time limit of the run")
    elif executed.rc != 0:
        tail = " | ".join(_tail(executed.stderr))
        problems.append(f"mpirun exited {executed.rc}" + (f": {tail}" if tail else ""))
    if looks_like_nccl_tests(text):
        try:
            result = parse_nccl_tests(text, source, allow_truncated=True)
        except ParseError as error:
            problems.append(error.message)
        else:
            summary = parse_nccl_log(text, source=source) if looks_like_nccl_log(text) else None
            log_check = None
            if summary is not None:
                verdict = judge_log(summary, topology)
                log_check = LogCheck(verdict=verdict.verdict, messages=[f.message for f in verdict.findings],
                                     rails=rails_by_host(summary))
            series = series_from_result(result, variant=run.variant, repeat=run.repeat, source=source,
                                        expectation=judge_run(result, topology, summary), log_check=log_check,
                                        launched=run.collective)
            errors = [*series.errors, *problems]
            return series.model_copy(update={"command": executed.command, "launch": launch, "errors": errors,
                                             "failed": series.failed or executed.rc != 0}), result.nccl_version
    else:
        problems.append("no nccl-tests table in the output: " + (" | ".join(_tail(executed.stdout))
                                                                  or "the output is empty"))
    return Series(collective=run.collective, variant=run.variant, repeat=run.repeat, source=source, ranks=0,
                  points=[], avg_busbw_gbps=None, peak_busbw_gbps=None, peak_size_bytes=None, truncated=False,
                  failed=True, errors=problems, expectation=None, log_check=None, command=executed.command,
                  launch=launch), None


def _settings(config: NcclConfig | None) -> list[Setting]:
    if config is None:
        return []
    settings: list[Setting] = []
    for setting in config.pinned():
        default = next((r.value for r in setting.replaced if r.layer == "nccl-default"), None)
        settings.append(Setting(key=setting.name, value=setting.value, default=default,
                                source=f"{setting.layer}: {setting.source}"))
    return settings


def price_of(spec: ClusterSpec) -> Price | None:
    """The cluster's price per hour from the plan (catalog or price cache); None when unknown."""
    from toolkit.catalog.checks import check_spec
    from toolkit.plan import build_plan

    try:
        cost = build_plan(spec, check_spec(spec)).cost
    except GpuctlError:
        return None
    if cost.per_hour is None or cost.currency not in ("CNY", "USD"):
        return None  # unknown, or the lab (no currency: it costs nothing)
    sources = sorted({f"{p.price_source} (read {p.price_read})" for p in cost.pools if p.price_source})
    cny = cost.per_hour if cost.currency == "CNY" else None
    usd = cost.per_hour if cost.currency == "USD" else cost.per_hour_usd  # CNY converted at the plan's dated rate
    if cost.currency == "CNY" and cost.exchange_rate is not None:
        sources.append(f"USD at {cost.exchange_rate.describe()}")
    return Price(cny_per_hour=cny, usd_per_hour=usd, source="; ".join(sources) or "gpuctl plan")


def build_results(spec: ClusterSpec, outputs: ClusterOutputs, facts: Sequence[NodeFacts],
                  executed: Sequence[Executed], run_dir: Path, started: datetime, replayed: bool) -> Results:
    launch = facts[0]
    judged = [_series_and_version(e, run_dir, launch.topology) for e in executed]
    series = [s for s, _ in judged]
    version = next((v for _, v in judged if v), None)  # the first output that printed one
    node = outputs.nodes[0]
    meta = RunMeta(
        cluster=spec.name, provider=spec.provider, region=spec.region, instance_type=node.instance_type,
        nodes=len(facts), gpus_per_node=launch.slots, nccl_version=version,
        started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"), settings=_settings(launch.config),
        price=price_of(spec), replayed=REPLAYED if replayed else None,
    )
    return Results(meta=meta, series=series)


def write_results(results: Results, run_dir: Path) -> Path:
    path = run_dir / FILE_NAME
    write_atomic(path, dump(results), mode=0o644)
    return path


def new_run_dir(base: Path, cluster: str, now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    run_dir = base / f"{cluster}-{stamp}"
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise UsageError(f"{run_dir} exists already; give another --output") from None
    except OSError as error:
        raise UsageError(f"{run_dir}: cannot create the run directory ({error.strerror or error})") from None
    return run_dir


def write_plan(run_dir: Path, runs: Sequence[PlannedRun], sweep: Sweep) -> None:
    """What was asked, before anything runs: an interrupted bench still says what it meant to do."""
    write_atomic(run_dir / "plan.json", json.dumps({
        "sweep": {"name": sweep.name, "args": shlex.join(sweep.args()), "timeout_s": sweep.timeout_s},
        "runs": [{"name": r.name, "collective": r.collective, "variant": r.variant, "repeat": r.repeat,
                  "extra_env": dict(r.extra_env)} for r in runs],
    }, indent=2) + "\n", mode=0o644)
