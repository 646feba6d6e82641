"""Reading the small files a spec names (the spec itself, an SSH public key) without trusting them.

A path can name anything: `/dev/zero` (endless), a FIFO (blocks until a writer comes), a
directory, a socket, a 40 GB log. `read_small_file` reads through `toolkit.files.read_bounded`: a
regular file only (checked before the open and again on the descriptor), opened non-blocking, at
most `limit + 1` bytes read, so nothing hangs and memory stays bounded whatever the path is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.errors import SpecError
from toolkit.files import FileError, read_bounded

if TYPE_CHECKING:
    from toolkit.spec.models import ClusterSpec

MAX_PUBLIC_KEY_BYTES = 16 * 1024  # an RSA-16384 OpenSSH public key is under 3 KiB

def read_small_file(path: str | Path, *, limit: int, what: str, hint: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; SpecError otherwise.

    `what` names the file in messages ("cluster spec", "SSH public key"). Every refusal is one
    line that starts with the path (the checks are `toolkit.files.read_bounded`'s).
    """
    try:
        return read_bounded(path, limit=limit, what=what)
    except FileError as error:
        raise SpecError([error.message], hint=hint) from None


def read_public_key(spec: ClusterSpec) -> str:
    """The spec's OpenSSH public key, one line, read from a bounded regular file; what every cloud's
    key pair imports. Which key types a cloud takes is its own check (its args module)."""
    path = spec.ssh.public_key
    if path is None:
        raise SpecError([f"{spec.name}: ssh.public_key is required for provider {spec.provider}"])
    hint = "give the path of your .pub file, e.g. ~/.ssh/id_ecdsa.pub"
    try:
        # A regular file of bounded size only: /dev/zero, a FIFO or a directory is refused, not read.
        raw = read_small_file(Path(path), limit=MAX_PUBLIC_KEY_BYTES, what="public key file (.pub)", hint=hint)
    except SpecError as error:
        raise SpecError([f"ssh.public_key: {problem}" for problem in error.problems], hint=hint) from None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise SpecError([f"ssh.public_key: {path}: is not UTF-8 text, not an OpenSSH public key"], hint=hint) from None
    if not text.startswith(("ssh-", "ecdsa-", "sk-")) or "PRIVATE KEY" in text:
        raise SpecError(
            [f"ssh.public_key: {path}: is not an OpenSSH public key (ssh-ed25519 / ssh-rsa ...)"],
            hint="point it at the .pub file, never at the private key",
        )
    if any(not (char.isprintable() or char == " ") for char in text):
        # The key goes into the cloud's key pair and authorized_keys: one key, one line.
        raise SpecError(
            [f"ssh.public_key: {path}: holds more than one line or control characters; one OpenSSH key per file"],
            hint=hint,
        )
    return text
