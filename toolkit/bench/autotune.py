"""Autotune selection: which swept settings beat NCCL's default by more than the noise.

Only the choosing is here; running the sweep is the bench's job. The sweep covers a small,
documented set of knobs (`KNOBS`), one candidate at a time, interleaved with default runs
(default, candidate, default, candidate ...), several repeats each. For every band of message
sizes (`compare.BANDS`) a candidate is kept only when `compare.compare_band` calls it a "gain"
against the default runs it was interleaved with; among kept candidates the largest median gain
wins. Pure noise therefore keeps nothing.

Two outputs, each line with the measurements that justify it:

- a config file for NCCL's example tuner plugin (`ext-tuner/example`, loaded with
  `NCCL_TUNER_PLUGIN` and read from `NCCL_TUNER_CONFIG_FILE`). Its CSV format, from the plugin's
  README and nccl_tuner.conf (NVIDIA/nccl @3ea7eedf3b9b94f1d9f99f4e55536dfcbd23c1ca):
  `collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps,regBuff]`,
  collectives broadcast/reduce/allgather/reducescatter/allreduce, algorithms tree/ring/
  collnet_direct/collnet_chain/nvls/nvls_tree/pat, protocols ll/ll128/simple, `-1` for "any" or
  "NCCL's default" (channels), `#` comments. A line needs both an algorithm and a protocol, so only
  candidates that set NCCL_ALGO and NCCL_PROTO go there. The plugin prefers ring/simple where no
  line matches (its README, "Default Behavior"): install it only with lines for every size used.
- nccl.conf lines: nccl.conf applies to every message size, so a candidate goes there only when it
  gains in at least one band and loses in none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from toolkit.bench.compare import BANDS, BandComparison, Repeat, compare_band

# The knobs a sweep may set, and the values the tuner CSV spells for them. QPs per connection and
# the buffer size have no column in the tuner CSV: a win there can only go to nccl.conf.
KNOBS = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
         "NCCL_IB_QPS_PER_CONNECTION", "NCCL_BUFFSIZE")
TUNER_ALGORITHMS = {"tree": "tree", "ring": "ring", "collnetdirect": "collnet_direct",
                    "collnetchain": "collnet_chain", "nvls": "nvls", "nvlstree": "nvls_tree", "pat": "pat"}
TUNER_PROTOCOLS = {"ll": "ll", "ll128": "ll128", "simple": "simple"}
# nccl-tests' collective names -> the tuner's; alltoall and sendrecv are not tunable there.
TUNER_COLLECTIVES = {"all_reduce": "allreduce", "all_gather": "allgather",
                     "reduce_scatter": "reducescatter", "broadcast": "broadcast", "reduce": "reduce"}
TUNER_MAX_BYTES = 4294967295  # the plugin's "covers all sizes" upper bound (its README)


class Candidate(BaseModel):
    """One swept setting, measured interleaved with the default."""

    model_config = ConfigDict(extra="forbid")

    name: str  # "ring-ll128"
    settings: dict[str, str]  # NCCL_ALGO=Ring, NCCL_PROTO=LL128 ...
    runs: list[dict[int, float]]  # repeat -> size -> busbw GB/s
    default_runs: list[dict[int, float]]  # the default runs interleaved with these, same order


class Choice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    band: str
    candidate: str | None  # None: nothing beat the default beyond the noise
    settings: dict[str, str] = Field(default_factory=dict)
    comparison: BandComparison | None = None  # the winner's, or None
    considered: list[BandComparison] = Field(default_factory=list)  # every candidate's, same order


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collective: str
    nodes: int
    ranks: int
    choices: list[Choice]
    nccl_conf: dict[str, str]  # settings safe for every size; empty when none
    nccl_conf_from: str | None  # the candidate they come from
    nccl_conf_evidence: list[BandComparison] = Field(default_factory=list)  # its result in every band
    tuner_lines: list[str]  # CSV lines, each preceded by its "# " justification


def _check(candidate: Candidate) -> None:
    unknown = sorted(set(candidate.settings) - set(KNOBS))
    if unknown:
        raise ValueError(f"{candidate.name}: {', '.join(unknown)} not among the swept knobs {KNOBS}")


def _as_repeats(runs: Sequence[Mapping[int, float]]) -> list[Repeat]:
    return list(runs)


def select(collective: str, nodes: int, ranks: int, candidates: Sequence[Candidate]) -> Selection:
    for candidate in candidates:
        _check(candidate)
    choices: list[Choice] = []
    per_candidate: dict[str, list[BandComparison]] = {c.name: [] for c in candidates}
    for band, _, _ in BANDS:
        considered: list[tuple[Candidate, BandComparison]] = []
        for candidate in candidates:
            result = compare_band(_as_repeats(candidate.runs), _as_repeats(candidate.default_runs), band)
            if result is not None:
                considered.append((candidate, result))
                per_candidate[candidate.name].append(result)
        if not considered:
            continue
        gains = [(c, r) for c, r in considered if r.verdict == "gain"]
        best = max(gains, key=lambda pair: pair[1].median_diff, default=None)
        choices.append(Choice(band=band, candidate=best[0].name if best else None,
                              settings=dict(best[0].settings) if best else {},
                              comparison=best[1] if best else None,
                              considered=[r for _, r in considered]))
    conf_from = _nccl_conf_candidate(candidates, per_candidate)
    nccl_conf = dict(next(c.settings for c in candidates if c.name == conf_from)) if conf_from else {}
    return Selection(collective=collective, nodes=nodes, ranks=ranks, choices=choices,
                     nccl_conf=nccl_conf, nccl_conf_from=conf_from,
                     nccl_conf_evidence=per_candidate[conf_from] if conf_from else [],
                     tuner_lines=tuner_lines(collective, nodes, ranks, choices))


def _nccl_conf_candidate(candidates: Sequence[Candidate],
                         per_candidate: Mapping[str, list[BandComparison]]) -> str | None:
    """The candidate with the largest gain among those that gain somewhere and lose nowhere."""
    safe = [(max(r.median_diff for r in results if r.verdict == "gain"), name)
            for name, results in per_candidate.items()
            if any(r.verdict == "gain" for r in results) and not any(r.verdict == "loss" for r in results)]
    return max(safe)[1] if safe else None


def _tuner_fields(settings: Mapping[str, str]) -> tuple[str, str, int] | None:
    algo = TUNER_ALGORITHMS.get(settings.get("NCCL_ALGO", "").lower())
    proto = TUNER_PROTOCOLS.get(settings.get("NCCL_PROTO", "").lower())
    if algo is None or proto is None:
        return None
    low, high = settings.get("NCCL_MIN_NCHANNELS"), settings.get("NCCL_MAX_NCHANNELS")
    channels = int(low) if low is not None and low == high else -1
    return algo, proto, channels


def tuner_lines(collective: str, nodes: int, ranks: int, choices: Sequence[Choice]) -> list[str]:
    """The tuner-plugin CSV for the kept choices, each line preceded by a `#` line holding its
    measurements. Choices the CSV cannot express (no algorithm+protocol, alltoall) get a comment."""
    name = TUNER_COLLECTIVES.get(collective)
    lines: list[str] = []
    for choice in choices:
        if choice.candidate is None or choice.comparison is None:
            continue
        c = choice.comparison
        why = (f"# {collective} {choice.band} ({c.sizes[0]}-{c.sizes[-1]} B measured): {choice.candidate} "
               f"median {c.median_diff:+.1%} vs default, pairs {c.min_diff:+.1%}..{c.max_diff:+.1%}, "
               f"noise {c.noise:.1%}, {c.repeats} interleaved repeats")
        fields = _tuner_fields(choice.settings)
        if name is None or fields is None:
            lines.append(why + "; not expressible in the tuner CSV "
                         + ("(the plugin does not tune this collective)" if name is None
                            else "(needs both NCCL_ALGO and NCCL_PROTO)"))
            continue
        algo, proto, channels = fields
        high = min(c.max_bytes, TUNER_MAX_BYTES)
        lines += [why, f"{name},{c.min_bytes},{high},{algo},{proto},{channels},{nodes},{ranks}"]
    return lines


def nccl_conf_lines(selection: Selection) -> list[str]:
    """`KEY=value` lines for nccl.conf, after a `#` line with the evidence; empty when nothing
    beat the default everywhere it was measured."""
    if not selection.nccl_conf:
        return []
    evidence = "; ".join(f"{r.band} {r.median_diff:+.1%} {r.verdict} (noise {r.noise:.1%}, {r.repeats} repeats)"
                         for r in selection.nccl_conf_evidence)
    head = (f"# autotune {selection.collective} {selection.nodes} nodes x {selection.ranks} ranks: "
            f"{selection.nccl_conf_from} vs default: {evidence}")
    return [head, *(f"{k}={v}" for k, v in selection.nccl_conf.items())]
