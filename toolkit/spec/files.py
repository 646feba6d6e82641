"""Reading the small files a spec names (the spec itself, an SSH public key) without trusting them.

A path can name anything: `/dev/zero` (endless), a FIFO (blocks until a writer comes), a
directory, a socket, a 40 GB log. `read_small_file` looks before it reads: the path must be a
regular file (checked with stat, and again on the opened descriptor, so a swap in between is
caught), it is opened non-blocking, and at most `limit + 1` bytes are read, so nothing hangs and
memory stays bounded whatever the path is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.errors import SpecError

if TYPE_CHECKING:
    from toolkit.spec.models import ClusterSpec

MAX_PUBLIC_KEY_BYTES = 16 * 1024  # an RSA-16384 OpenSSH public key is under 3 KiB

# What a path that is not a regular file is, in the words an error uses (also toolkit.commands._inputs).
FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_small_file(path: str | Path, *, limit: int, what: str, hint: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; SpecError otherwise.

    `what` names the file in messages ("cluster spec", "SSH public key"). Every refusal is one
    line that starts with the path.
    """
    shown = str(path)
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise SpecError([f"{shown}: no such file"], hint=hint) from None
    except NotADirectoryError:
        raise SpecError([f"{shown}: no such file (a part of the path is not a directory)"], hint=hint) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise SpecError([f"{shown}: cannot be read ({_reason(exc)})"], hint=hint) from None
    _require_regular(before, shown, limit=limit, what=what, hint=hint)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:
        raise SpecError([f"{shown}: cannot be read ({_reason(exc)})"], hint=hint) from None
    try:
        _require_regular(os.fstat(fd), shown, limit=limit, what=what, hint=hint)
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise SpecError([f"{shown}: cannot be read ({_reason(exc)})"], hint=hint) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise SpecError([f"{shown}: more than {limit} bytes is far too large for a {what}"], hint=hint)
    return data


def _require_regular(info: os.stat_result, shown: str, *, limit: int, what: str, hint: str | None) -> None:
    if stat.S_ISREG(info.st_mode):
        if info.st_size > limit:
            raise SpecError(
                [f"{shown}: {info.st_size} bytes is far too large for a {what} (at most {limit})"], hint=hint
            )
        return
    kind = next((name for test, name in FILE_KINDS if test(info.st_mode)), "not a regular file")
    raise SpecError([f"{shown}: is {kind}, not a regular file; give the path of a {what}"], hint=hint)


def _reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)


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
