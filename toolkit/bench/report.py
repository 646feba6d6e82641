"""One report from one or more bench runs: PNG plots beside an HTML page (or a markdown file).

The page is self-contained: inline CSS, images by relative path, no script and no URL outside the
output directory, so it opens offline and survives being zipped or attached. Markdown carries the
same tables for a pull request or a wiki, with the same PNGs beside it.

Plots: busbw against message size (log-x), one PNG per collective, a line per run and variant
(the median over repeats of the out-of-place busbw at each size) and a dashed line at the model's
expected busbw where the run has one. Tables: one column per run, side by side.

matplotlib is imported inside `render_plots` only (Agg backend, no display), so importing this
module costs nothing for the rest of gpuctl.

Every string from a results.json is escaped for the format it goes into (`toolkit.bench.escape`).
Files are written only into the output directory, each whole or not at all and never through a
link standing there (`toolkit.files.write_atomic` renames a new file over it); the PNGs' names
come from collective names the schema restricts to letters, digits and `_`.
"""

from __future__ import annotations

import io
import statistics
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolkit.bench.compare import BandComparison, compare
from toolkit.bench.escape import html_text, markdown_text, plot_text, url_path
from toolkit.bench.results import COLLECTIVE_NAME, Results, Series
from toolkit.errors import UsageError
from toolkit.files import write_atomic

# One PNG per collective: nccl-tests has 10 collectives, and each plot costs a fraction of a second.
MAX_PLOTS = 16
# The report is for sharing: readable by others, like any file the user writes.
FILE_MODE = 0o644


@dataclass(frozen=True)
class Run:
    label: str  # the run directory's name, unique within a report
    results: Results


def _median_curve(series: Sequence[Series]) -> list[tuple[int, float]]:
    """Size -> median out-of-place busbw over the repeats (failed runs left out)."""
    by_size: dict[int, list[float]] = defaultdict(list)
    for s in series:
        if s.failed:
            continue
        for p in s.points:
            if p.size_bytes > 0:
                by_size[p.size_bytes].append(p.out_of_place.busbw_gbps)
    return [(size, statistics.median(v)) for size, v in sorted(by_size.items())]


def _group(run: Run) -> dict[tuple[str, str], list[Series]]:
    groups: dict[tuple[str, str], list[Series]] = defaultdict(list)
    for s in run.results.series:
        groups[(s.collective, s.variant)].append(s)
    return groups


def collectives(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(s.collective for run in runs for s in run.results.series))


def _peak(run: Run) -> Series | None:
    """The series holding the run's highest busbw: tuned where there is one, else default."""
    usable = [s for s in run.results.series if not s.failed and s.peak_busbw_gbps is not None]
    tuned = [s for s in usable if s.variant == "tuned"] or usable
    return max(tuned, key=lambda s: s.peak_busbw_gbps or 0.0, default=None)


def render_plots(runs: Sequence[Run], out: Path) -> dict[str, str]:
    """One PNG per collective with a busbw to plot, in `out`; returns collective -> file name.
    A collective whose every run failed has no curve: its notes in the page say why."""
    names = [name for name in collectives(runs)
             if any(_median_curve(series) for run in runs for (coll, _), series in _group(run).items() if coll == name)]
    if len(names) > MAX_PLOTS:
        raise UsageError(f"the runs hold {len(names)} collectives with results; a report draws one plot per "
                         f"collective, at most {MAX_PLOTS} (nccl-tests has 10): report fewer runs at once")
    if not names:
        return {}
    import matplotlib

    matplotlib.use("Agg")  # headless: no display, the same pixels everywhere
    import matplotlib.pyplot as plt

    files: dict[str, str] = {}
    for name in names:
        figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
        for run in runs:
            for (coll, variant), series in _group(run).items():
                curve = _median_curve(series) if coll == name else []
                if not curve:
                    continue
                sizes, busbw = zip(*curve, strict=True)
                axes.plot(sizes, busbw, marker="o", markersize=3,
                          linestyle="-" if variant == "tuned" else "--",
                          label=plot_text(f"{run.label} {variant} ({len(series)} run{'s' if len(series) > 1 else ''})"
                                          + (", replayed" if run.results.meta.replayed else "")))
            expected = {s.expectation.expected_busbw_gbps for s in run.results.series
                        if s.collective == name and s.expectation is not None
                        and s.expectation.expected_busbw_gbps is not None}
            for value in sorted(expected):
                axes.axhline(value, color="grey", linestyle=":", linewidth=1.2,
                             label=plot_text(f"{run.label} expected {value:g} GB/s"))
        axes.set_xscale("log", base=2)
        axes.set_xlabel("message size (bytes)")
        axes.set_ylabel("busbw (GB/s)")
        axes.set_title(plot_text(f"{name}: bus bandwidth by message size"))
        axes.grid(True, which="both", alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize=8, loc="upper left")
        file_name = plot_file_name(name)
        image = io.BytesIO()
        with warnings.catch_warnings():
            # A long run name that leaves no room for tight margins, a character the font lacks:
            # matplotlib draws what it can and warns; the picture is still right, so not on the terminal.
            warnings.simplefilter("ignore", UserWarning)
            figure.tight_layout()
            figure.savefig(image, format="png")
        plt.close(figure)
        write_atomic(out / file_name, image.getvalue(), mode=FILE_MODE)
        files[name] = file_name
    return files


def plot_file_name(collective: str) -> str:
    """`busbw-all_reduce.png`; a name the schema would refuse is refused here too (it names a file)."""
    if not COLLECTIVE_NAME.fullmatch(collective):
        raise ValueError(f"not a collective name: {collective!r}")
    return f"busbw-{collective}.png"


def _money(value: float | None, sign: str) -> str:
    return "unknown" if value is None else f"{sign}{value:,.2f}"


def summary_rows(runs: Sequence[Run]) -> list[tuple[str, list[str]]]:
    """(field, one cell per run): the side-by-side table."""
    rows: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        meta = run.results.meta
        peak = _peak(run)
        expected = peak.expectation.expected_busbw_gbps if peak and peak.expectation else None
        peak_bw = peak.peak_busbw_gbps if peak else None
        price = meta.price
        cny = price.cny_per_hour if price else None
        usd = price.usd_per_hour if price else None
        per_bw = [f"{sign}{value / peak_bw:.3f}/h per GB/s" for sign, value in (("¥", cny), ("$", usd))
                  if value is not None and peak_bw]
        verdict = peak.expectation.verdict if peak and peak.expectation else "not judged"
        cells = {
            "provider": meta.provider,
            "region": meta.region or "unknown",
            "instance type": meta.instance_type or "unknown",
            "nodes x GPUs": f"{meta.nodes} x {meta.gpus_per_node}",
            "NCCL version": meta.nccl_version or "unknown",
            "settings that differ from default": ", ".join(f"{s.key}={s.value}" for s in meta.settings) or "none",
            "peak busbw": (f"{peak_bw:g} GB/s ({peak.collective}, {peak.peak_size_bytes} B)"
                           if peak and peak_bw is not None else "no result"),
            "% of expected": (f"{peak_bw / expected:.0%} of {expected:g} GB/s ({verdict})"
                              if expected and peak_bw is not None else f"no expectation ({verdict})"),
            "¥/h": _money(cny, "¥"),
            "$/h": _money(usd, "$"),
            "cost per busbw": "; ".join(per_bw) or "unknown",
            "price source": price.source if price else "no price",
            "measured or replayed": ("replayed from real captures of other machines (lab)" if meta.replayed
                                     else "measured on this cluster"),
        }
        for key, value in cells.items():
            rows[key].append(value)
    return list(rows.items())


def comparisons(run: Run) -> dict[str, list[BandComparison]]:
    """Tuned against default per collective, where the run has both variants."""
    groups = _group(run)
    found: dict[str, list[BandComparison]] = {}
    for name in dict.fromkeys(s.collective for s in run.results.series):
        tuned = sorted(groups.get((name, "tuned"), []), key=lambda s: s.repeat)
        default = sorted(groups.get((name, "default"), []), key=lambda s: s.repeat)
        pairs = [(t, d) for t, d in zip(tuned, default, strict=False) if not t.failed and not d.failed]
        if pairs:
            found[name] = compare([_busbw(t) for t, _ in pairs], [_busbw(d) for _, d in pairs])
    return found


def rail_usage(run: Run) -> dict[str, dict[str, list[str]]]:
    """Per collective, per node: the network devices NCCL used, from the first tuned series whose
    log shows network connections (repeats of one job use the same rails)."""
    found: dict[str, dict[str, list[str]]] = {}
    for series in sorted(run.results.series, key=lambda s: (s.variant != "tuned", s.repeat)):
        if series.log_check is not None and series.log_check.rails and series.collective not in found:
            found[series.collective] = series.log_check.rails
    return found


def _busbw(series: Series) -> dict[int, float]:
    return {p.size_bytes: p.out_of_place.busbw_gbps for p in series.points}


_e = html_text


_CSS = """body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:.3em .6em;text-align:left;vertical-align:top}th{background:#eee}
img{max-width:100%;border:1px solid #ddd}.note{color:#555;font-size:.9em}"""


def render_html(runs: Sequence[Run], plots: dict[str, str]) -> str:
    labels = [run.label for run in runs]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>gpuctl bench report: {_e(', '.join(labels))}</title>", f"<style>{_CSS}</style></head><body>",
             f"<h1>gpuctl bench report</h1><p class=\"note\">{len(runs)} run(s): {_e(', '.join(labels))}</p>",
             "<h2>Runs side by side</h2><table>",
             "<tr><th></th>" + "".join(f"<th>{_e(label)}</th>" for label in labels) + "</tr>"]
    parts += ["<tr><th>" + _e(field) + "</th>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>"
              for field, cells in summary_rows(runs)]
    parts.append("</table>")
    for name, file_name in plots.items():
        parts.append(f"<h2>{_e(name)}</h2><img src=\"{_e(url_path(file_name))}\" "
                     f"alt=\"busbw by message size, {_e(name)}\">")
    for run in runs:
        for name, bands in comparisons(run).items():
            parts.append(f"<h3>{_e(run.label)}: {_e(name)} tuned vs default</h3><table>"
                         "<tr><th>band</th><th>sizes</th><th>median</th><th>pairs</th><th>noise</th>"
                         "<th>verdict</th></tr>")
            parts += ["<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in _band_cells(b)) + "</tr>" for b in bands]
            parts.append("</table>")
        for name, hosts in rail_usage(run).items():
            parts.append(f"<h3>{_e(run.label)}: {_e(name)} rail usage per node (NCCL log)</h3><table>"
                         "<tr><th>node</th><th>network devices used</th></tr>")
            parts += [f"<tr><td>{_e(host)}</td><td>{_e(', '.join(devices))}</td></tr>"
                      for host, devices in hosts.items()]
            parts.append("</table>")
        problems = [f"{s.collective} {s.variant} #{s.repeat} ({s.source}): "
                    + ("failed: " + "; ".join(s.errors) if s.failed else "output cut before its summary")
                    for s in run.results.series if s.failed or s.truncated]
        checks = [f"{s.collective} {s.variant} #{s.repeat}: check-log {s.log_check.verdict}: "
                  + "; ".join(s.log_check.messages) for s in run.results.series if s.log_check is not None]
        if problems or checks:
            parts.append(f"<h3>{_e(run.label)}: notes</h3><ul>"
                         + "".join(f"<li>{_e(line)}</li>" for line in [*problems, *checks]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _band_cells(band: BandComparison) -> list[str]:
    return [band.band, f"{band.sizes[0]}-{band.sizes[-1]} B", f"{band.median_diff:+.1%}",
            f"{band.min_diff:+.1%} .. {band.max_diff:+.1%} ({band.repeats})", f"{band.noise:.1%}", band.verdict]


_md = markdown_text


def render_markdown(runs: Sequence[Run], plots: dict[str, str]) -> str:
    labels = [run.label for run in runs]
    lines = ["# gpuctl bench report", "", f"{len(runs)} run(s): {_md(', '.join(labels))}", "",
             "| | " + " | ".join(_md(label) for label in labels) + " |",
             "|---|" + "---|" * len(labels)]
    lines += [f"| {_md(field)} | " + " | ".join(_md(c) for c in cells) + " |"
              for field, cells in summary_rows(runs)]
    for name, file_name in plots.items():
        lines += ["", f"## {_md(name)}", "", f"![busbw by message size, {_md(name)}]({url_path(file_name)})"]
    for run in runs:
        for name, bands in comparisons(run).items():
            lines += ["", f"### {_md(run.label)}: {_md(name)} tuned vs default", "",
                      "| band | sizes | median | pairs | noise | verdict |", "|---|---|---|---|---|---|"]
            lines += ["| " + " | ".join(_md(cell) for cell in _band_cells(b)) + " |" for b in bands]
        for name, hosts in rail_usage(run).items():
            lines += ["", f"### {_md(run.label)}: {_md(name)} rail usage per node (NCCL log)", "",
                      "| node | network devices used |", "|---|---|"]
            lines += [f"| {_md(host)} | {_md(', '.join(devices))} |" for host, devices in hosts.items()]
    return "\n".join(lines) + "\n"


def write_report(runs: Sequence[Run], out: Path, fmt: str = "html") -> Path:
    """Write the report (and its PNGs) into directory `out`; returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    plots = render_plots(runs, out)
    if fmt == "md":
        page = out / "report.md"
        write_atomic(page, render_markdown(runs, plots), mode=FILE_MODE)
    else:
        page = out / "report.html"
        write_atomic(page, render_html(runs, plots), mode=FILE_MODE)
    return page
