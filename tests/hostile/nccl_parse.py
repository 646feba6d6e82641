"""What NCCL itself reads out of an nccl.conf text: its parser, line for line, in two releases.

`setEnvFile` (src/misc/param.cc) in NVIDIA/nccl:
- v2.26.2-1: getline() (a line of any length); a line starting with '#' is skipped; one trailing
  '\\n' is dropped; the name is everything before the first '=' (at most 1023 bytes), the value the
  rest (at most 1023 bytes, '\\r' and all); a line without '=' is skipped.
- v2.30.7-1: fgets() into char[4096]: a longer line is read as several lines; one trailing '\\n',
  then one trailing '\\r' are dropped; then the same '#', name and value rules.
A test that renders nccl.conf from hostile input compares what both read with what it meant to write.
"""

from __future__ import annotations

NCCL_226 = "2.26.2"
NCCL_230 = "2.30.7"
FGETS_BUFFER = 4096
FIELD = 1023


def _assign(line: bytes, found: dict[str, str]) -> None:
    line = line.split(b"\0", 1)[0]  # C strings: a NUL ends the line for every later step
    if line.startswith(b"#"):
        return
    name, equals, value = line.partition(b"=")
    if not equals:
        return
    found[name[:FIELD].decode("utf-8", "replace")] = value[:FIELD].decode("utf-8", "replace")


def _lines(data: bytes) -> list[bytes]:
    """The file cut after each '\n' only (what getline and fgets stop at), each with its '\n'."""
    pieces = data.split(b"\n")
    return [piece + b"\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def nccl_reads(text: str, version: str) -> dict[str, str]:
    """name -> value as NCCL `version` (NCCL_226 or NCCL_230) sets them from the file `text`."""
    data = text.encode("utf-8", "surrogatepass")
    found: dict[str, str] = {}
    if version == NCCL_226:
        for line in _lines(data):
            _assign(line.removesuffix(b"\n"), found)
        return found
    for whole in _lines(data):
        # fgets stops at size - 1 bytes: the rest of a longer line is read as the next "line".
        chunks = [whole[i:i + FGETS_BUFFER - 1] for i in range(0, len(whole), FGETS_BUFFER - 1)]
        for line in chunks:
            line = line.split(b"\0", 1)[0].removesuffix(b"\n").removesuffix(b"\r")
            _assign(line, found)
    return found
