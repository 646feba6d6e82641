"""Text helpers every capture parser shares: one place for what pasted output looks like.

- `decode_capture`: bytes of a capture file to text, naming the encoding when it is not UTF-8
  (PowerShell's `>` writes UTF-16 with a BOM; some tools write UTF-16 without one);
- `strip_ansi` / `clean_lines`: colour and underline escapes that `kubectl exec -t`, `ip -c` and
  terminals leave in;
- `is_shell_prompt` / `prompt_host`: the prompt lines users paste with the output
  (`[user@host ~]$ cmd`, `root@host:/dir# cmd`), and the host name they carry;
- `shown`: a piece of the input quoted in an error message, capped so that a 40 MB line is never
  echoed back whole.
"""

from __future__ import annotations

import re

# ESC [ ... letter: colour/underline codes (SGR) and the few cursor codes terminals add.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A shell prompt a user pasted with the output: `[user@host ~]$ cmd`, `root@host:/dir# cmd`,
# `((venv) ) [user@host ~]$ cmd`, `[root:dir]$ cmd`. Anchored on the `]$`/`:path#` shapes so
# that no line of real output (which never contains them) is taken for a prompt.
_PROMPT = re.compile(r"^(?:\([^\[]*)?(?:\[[^\]]*\]|[\w.-]+@[\w.-]+:\S*)\s*[$#](?:\s|$)")
# The user@host part of a prompt: `[dcbsr_dev@tpgds-aihub0007 ~]$`, `root@gpu-h20-0156:/app#`.
_PROMPT_HOST = re.compile(r"^(?:\([^\[]*)?\[?[\w.-]+@([A-Za-z0-9][\w.-]*?)[\s:\]]")

# A prompt or note that introduces a known command's output in a pasted transcript: any prompt
# ending in $, # or >, `# cmd: ...` notes, `sudo`, `kubectl exec ... --`.
_COMMAND_PROMPT = re.compile(
    r"^(?:.*?[$#>]\s*|# cmd:.*?)"
    r"(?:sudo\s+)?(?:kubectl exec .*? -- )?"
    r"((?:nvidia-smi|ibv_devinfo|ibstat|show_gids|ibdev2netdev|rdma|ip|cat|ib_write_bw)\b.*)$"
)

# How much of the input an error message may quote.
MAX_SHOWN = 200


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def clean_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, line without ANSI escapes and trailing whitespace) for each line."""
    return [(number, _ANSI.sub("", raw).rstrip()) for number, raw in enumerate(text.splitlines(), 1)]


def is_shell_prompt(line: str) -> bool:
    """Whether `line` is a pasted shell prompt rather than command output."""
    return bool(_PROMPT.match(strip_ansi(line)))


def prompt_host(line: str) -> str | None:
    """The host name in a pasted prompt line (`[user@host dir]$`, `user@host:dir#`), else None."""
    line = strip_ansi(line)
    if not _PROMPT.match(line):
        return None
    match = _PROMPT_HOST.match(line)
    return match.group(1) if match else None


def command_prompt(line: str) -> str | None:
    """The command line of a prompt introducing a known tool's output (`[u@h ~]$ ibv_devinfo -d
    mlx5_0` -> `ibv_devinfo -d mlx5_0`), else None."""
    match = _COMMAND_PROMPT.match(strip_ansi(line))
    return match.group(1).strip() if match else None


def prompt_hosts(text: str) -> list[tuple[str, int]]:
    """Each distinct prompt host of a transcript with the first line it appears on."""
    found: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        host = prompt_host(line) if ("@" in line and ("$" in line or "#" in line)) else None
        if host is not None:
            found.setdefault(host, number)
    return list(found.items())


def same_host(a: str, b: str) -> bool:
    """`node75` and `node75.example.com` are one host; case does not matter."""
    return a.split(".")[0].lower() == b.split(".")[0].lower()


def shown(value: str, limit: int = MAX_SHOWN) -> str:
    """`value` quoted for an error message (repr), cut to `limit` characters with the length said."""
    value = value.strip()
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def cut(value: str, limit: int = MAX_SHOWN) -> str:
    """`value` as plain text for a note, cut to `limit` characters with the length said."""
    value = value.strip()
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value):,} characters)"


def _utf16_without_bom(data: bytes) -> str | None:
    """'le' or 'be' when the bytes look like UTF-16 text without a BOM (NUL in every other byte)."""
    sample = data[:4096]
    if len(sample) < 4 or sample.count(0) < len(sample) // 4:
        return None
    odd_nul = sample[1::2].count(0)
    even_nul = sample[0::2].count(0)
    half = len(sample) // 2
    if odd_nul > half * 0.6 and even_nul < half * 0.1:
        return "le"
    if even_nul > half * 0.6 and odd_nul < half * 0.1:
        return "be"
    return None


def decode_capture(data: bytes) -> tuple[str, str | None]:
    """The text of a capture file, and a note naming the encoding when it was not plain UTF-8.

    UTF-16 (with a BOM, as PowerShell's `>` writes it, or NUL-interleaved without one) is decoded;
    a UTF-8 BOM is dropped; bytes that are not UTF-8 become U+FFFD and the note says how many.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        order = "LE" if data.startswith(b"\xff\xfe") else "BE"
        text = data[2:].decode(f"utf-16-{order.lower()}", errors="replace")
        return text, f"the file is UTF-16 {order} (byte-order mark), not UTF-8: decoded as UTF-16"
    order16 = _utf16_without_bom(data)
    if order16 is not None:
        text = data.decode(f"utf-16-{order16}", errors="replace")
        return text, (f"the file is UTF-16 {order16.upper()} without a byte-order mark (a NUL byte between "
                      "the characters), not UTF-8: decoded as UTF-16")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad:
        return text, f"{bad} byte(s) are not UTF-8 and were replaced: the file may be in another encoding"
    return text, None
