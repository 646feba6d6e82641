"""The first step of every command that takes a SPEC: load it, check it against the catalog."""

from __future__ import annotations

import sys
from pathlib import Path

from toolkit.catalog.checks import check_spec
from toolkit.catalog.result import CheckResult
from toolkit.commands._inputs import SPEC, require_input
from toolkit.errors import CatalogError
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec


def load_spec_arg(path: str | Path) -> ClusterSpec:
    """Load the spec a command was given: a path that does not exist or cannot be read exits 2
    (like every path argument), a spec that does not parse or fit the schema 3."""
    return load_spec(require_input(path, SPEC))


def load_checked_spec(path: str | Path, *, show_warnings: bool = True) -> tuple[ClusterSpec, CheckResult]:
    """Load and check a spec; refuse with every problem listed; print warnings to stderr."""
    spec = load_spec_arg(path)
    result = check_spec(spec, source=str(path))
    if result.problems:
        raise CatalogError(result.problems)
    if show_warnings:
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return spec, result
