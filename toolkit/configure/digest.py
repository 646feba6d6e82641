"""sha256 digests of bytes and of file trees: what converge fingerprints and render's install
inputs are made of, computed one way."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from toolkit.paths import REPO


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_digest(roots: Iterable[Path]) -> str:
    """sha256 over every file under `roots`: relative name and content, in a stable order."""
    digest = hashlib.sha256()
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(REPO) if path.is_relative_to(REPO) else path).encode() + b"\0")
            digest.update(sha(path.read_bytes()).encode() + b"\n")
    return digest.hexdigest()
