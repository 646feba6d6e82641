"""pyproject.toml: the license as an SPDX string (PEP 639), which needs setuptools>=77; the table
form makes every `pip install -e .` print a deprecation banner. The progress library is declared."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_license_is_an_spdx_string_and_setuptools_is_new_enough_for_it() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert not any(c.startswith("License ::") for c in PYPROJECT["project"].get("classifiers", []))
    setuptools = next(r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    match = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools)
    assert match is not None, setuptools
    assert int(match.group(1)) >= 77, setuptools


def test_rich_and_jsonschema_are_declared() -> None:
    assert any(r.startswith("rich") for r in PYPROJECT["project"]["dependencies"])
    assert any(r.startswith("jsonschema") for r in PYPROJECT["project"]["optional-dependencies"]["dev"])
