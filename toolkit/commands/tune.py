"""`gpuctl tune`: NCCL settings for a node from its captures, each with its reason and source."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.errors import UsageError
from toolkit.vocabulary import FABRICS, NCCL_VARIABLE_MAX, NCCL_VARIABLE_PATTERN

if TYPE_CHECKING:
    from toolkit.tuning.config import NcclConfig

# The spec's NcclVariable rule (toolkit/vocabulary.py): NCCL_ and capitals, digits and '_'.
MAX_NAME = NCCL_VARIABLE_MAX
_NAME = re.compile(NCCL_VARIABLE_PATTERN)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print {VAR: {value, layer, reason, source}}")
    out.add_argument("--explain", action="store_true", help="print a table: key, value, layer, reason, source")
    parser.add_argument("--fabric", choices=FABRICS,
                        help="as the spec's network.fabric (default: from the spec or the capture)")
    parser.add_argument("--mtu", type=int, help="MTU of the fabric interfaces (default: spec, else the capture)")
    parser.add_argument("--nccl-version", help="NCCL version to tune for, e.g. 2.26.2 (default: spec)")
    parser.add_argument("--provider", choices=("alicloud", "tencentcloud", "local"),
                        help="picks the vendor profile for RoCE (default: spec)")
    parser.add_argument("--fabric-interface", metavar="IFNAME",
                        help="the interface the cluster network runs on (used for sockets on a tcp fabric)")
    parser.add_argument("--spec", type=Path, help="cluster spec: fabric, mtu, NCCL version, nccl_overrides")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="user override, wins over everything (repeatable)")
    parser.add_argument("--format", choices=("conf", "env"), default="conf",
                        help="conf: /etc/nccl.conf (default); env: shell exports for a job that cannot read "
                             "/etc/nccl.conf (they override it)")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="bundle directories or single capture files")


def _parse_overrides(items: list[str]) -> dict[str, str]:
    """`--set NAME=VALUE` items, checked as the spec's nccl_overrides are (UsageError naming the item)."""
    from toolkit.spec.models import check_nccl_text
    from toolkit.tuning.variables import setting_problem

    overrides: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or len(name) > MAX_NAME or not _NAME.fullmatch(name):
            raise UsageError(f"--set {_shown(item)}: expected NCCL_NAME=VALUE (NCCL_ then capital letters, digits "
                             f"and '_', at most {MAX_NAME} characters), e.g. --set NCCL_IB_TIMEOUT=22")
        try:
            check_nccl_text(value)
        except ValueError as exc:
            raise UsageError(f"--set {name}: the value {exc}") from None
        problem = setting_problem(name, value)
        if problem is not None:
            raise UsageError(f"--set {name}: {problem}")
        overrides[name] = value
    return overrides


def _shown(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _warn_unknown_names(overrides: dict[str, str], where: str) -> None:
    """A name one typo away from an NCCL variable gpuctl knows is most likely that variable
    misspelt; say so. Any other name NCCL does not read is said too. The setting is still written
    as given (a plain value: `_parse_overrides` refused anything path- or library-shaped)."""
    from toolkit.hints import unknown_nccl_variable
    from toolkit.tuning.variables import unknown_note

    for name, value in overrides.items():
        problem = unknown_nccl_variable(name)
        if problem is not None:
            print(f"warning: {where.format(name=name, value=value)}: {problem} (written as given)", file=sys.stderr)
        elif (note := unknown_note(name)) is not None:
            print(f"warning: {where.format(name=name, value=value)}: {note}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._inputs import CAPTURES, require_input
    from toolkit.topology.detect import detect_paths
    from toolkit.tuning.engine import tune

    fabric, mtu, version, provider = args.fabric, args.mtu, args.nccl_version, args.provider
    overrides: dict[str, str] = {}
    if args.spec is not None:
        from toolkit.commands._spec import load_spec_arg

        spec = load_spec_arg(args.spec)
        fabric = fabric or spec.network.fabric
        mtu = mtu if mtu is not None else spec.network.mtu
        version = version or spec.software.nccl
        provider = provider or spec.provider
        overrides.update(spec.nccl_override_values())
        _warn_unknown_names(overrides, f"{args.spec}: nccl_overrides.{{name}}")
    command_line = _parse_overrides(args.overrides)
    _warn_unknown_names(command_line, "--set {name}={value}")
    overrides.update(command_line)  # the command line wins over the spec
    for path in args.paths:
        require_input(path, CAPTURES, kind="file or directory")
    topology = detect_paths(list(args.paths))
    config = tune(topology, fabric=fabric, mtu=mtu, nccl_version=version, overrides=overrides,
                  provider=provider, fabric_interface=args.fabric_interface)
    if args.json:
        print(json.dumps(config.to_json(), indent=2))
    elif args.explain:
        sys.stdout.write(explain(config))
    elif args.format == "env":
        sys.stdout.write(config.render_env())
    else:
        sys.stdout.write(config.render_nccl_conf())
    return 0


def explain(config: NcclConfig) -> str:
    """A plain-text table: key, value, layer, reason, source; then notes and vendor differences."""
    rows = [("KEY", "VALUE", "LAYER", "REASON", "SOURCE")]
    for s in config.settings.values():
        value = s.value if s.pinned else f"({s.value})"
        reason = s.reason
        if s.replaced:
            chain = ", ".join(f"{r.layer} {r.value}" for r in s.replaced)
            reason = f"{reason} [replaces: {chain}]"
        rows.append((s.name, value, s.layer, reason, s.source))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}\n"
        f"{'':<{widths[0]}}  {'':<{widths[1]}}  {'':<{widths[2]}}  <{r[4]}>" if i else
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]} / {r[4]}"
        for i, r in enumerate(rows)
    ]
    lines.append("(value) = NCCL's own default, shown for reference and not written")
    if config.notes:
        lines.append("")
        lines.append("Notes:")
        lines.extend(f"  - {note}" for note in config.notes)
    if config.vendor_differences:
        lines.append("")
        lines.append(f"Differences from the vendor profile {config.vendor_profile}:")
        lines.extend(f"  - {k}: {v}" for k, v in config.vendor_differences.items())
    return "\n".join(lines) + "\n"
