"""One output path: whatever a command prints is redacted and has its terminal escapes neutralised,
whichever command prints it and wherever the text came from (a spec's error, a price cache, a log).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.hostile.harness import CANARIES, run_case, tally
from toolkit.output import CleanStream, clean, neutralise

REPO = Path(__file__).resolve().parents[2]
SECRET = CANARIES["ALICLOUD_SECRET_KEY"]
# A credential in the environment that a cache file carries (not a canary: the harness would count
# the cache file itself as a leak).
TOKEN = {"ALICLOUD_SECURITY_TOKEN": "sts-token-in-the-cache-0042"}


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b[2J\x1b]0;owned\x07", "\\u001b[2J\\u001b]0;owned\\u0007"),  # clear screen, retitle the window
    ("\x9b31m red via C1", "\\u009b31m red via C1"),  # the one-byte CSI
    ("price \u202e1.0\u202c", "price \\u202e1.0\\u202c"),  # a right-to-left override reorders digits
    ("one\u2028two", "one\\u2028two"),
    ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
    ("dos\r\nline", "dos\nline"),
    ("a lone \r returns the cursor", "a lone \\u000d returns the cursor"),
    ("\x7f del", "\\u007f del"),
    ("中文 stays", "中文 stays"),
])
def test_steering_characters_are_written_as_escapes(raw: str, shown: str) -> None:
    assert neutralise(raw) == shown


def test_a_json_document_stays_valid_json() -> None:
    document = json.dumps({"source": "cache \x85\u202e\x7f"}, ensure_ascii=False)
    assert json.loads(clean(document)) == {"source": "cache \x85\u202e\x7f"}


def test_a_terminal_that_cannot_show_a_character_gets_its_escape() -> None:
    target = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    stream = CleanStream(target)
    stream.write("价格 ¥3.5\n")
    stream.flush()
    assert target.buffer.getvalue() == "\\u4ef7\\u683c ¥3.5\n".encode("latin-1")


def test_validate_redacts_what_a_spec_error_echoes(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"  # outside the case's home: the harness looks for canaries there
    text = (REPO / "examples" / "alicloud-erdma-2x8.yaml").read_text()
    spec.write_text(text.replace("ecs.ebmgn7ex.32xlarge", f"ecs.{SECRET}"))
    (tmp_path / "home").mkdir()
    outcome = run_case("validate echoes a secret", ["validate", str(spec)], home=tmp_path / "home")
    assert outcome.code == 4, outcome.err
    assert SECRET not in outcome.err
    # The secret's capitals are no Alibaba type name: refused as a name that cannot exist, redacted.
    assert "'ecs.<ALICLOUD_SECRET_KEY>' cannot be an instance type of Alibaba Cloud" in outcome.err


def cache_with(source: str, note: str | None = None) -> str:
    entry = {"provider": "alicloud", "region": "cn-wulanchabu", "zone": "cn-wulanchabu-c",
             "instance_type": "ecs.ebmgn7ex.32xlarge", "billing": "pay_as_you_go", "currency": "CNY",
             "value": 100.5, "read_at": "2026-11-30T10:00:00Z", "source": source, "note": note}
    return json.dumps({"version": 1, "entries": [entry]})


def test_text_from_a_cache_is_never_printed_raw(tmp_path: Path) -> None:
    surface = tally("output")
    hostile = ["\x1b[2J\x1b[H", "\x1b]0;gpuctl owns your title\x07", "\x9b6n", "\u202elive\u202c", "a\rb",
               f"key {TOKEN['ALICLOUD_SECURITY_TOKEN']}", "LTAI5tAbCdEfGhIjKlMnOpQr", "SECRET_KEY=abcdefgh1234",
               "\x00nul"]
    for index, text in enumerate(hostile):
        home = tmp_path / f"home-{index}"
        home.mkdir()
        (home / "prices.json").write_text(cache_with(f"live: {text}", note=text))
        for argv in (["plan", str(REPO / "examples" / "alicloud-erdma-2x8.yaml")],
                     ["plan", "--json", str(REPO / "examples" / "alicloud-erdma-2x8.yaml")],
                     ["choose", "--gpu-memory", "80", "--gpus", "16", "--hours", "10"]):
            outcome = run_case(f"cache text {text!r}: gpuctl {' '.join(argv[:2])}", argv, home=home, env=TOKEN)
            printed = outcome.out + outcome.err
            raw = [c for c in "\x1b\x07\x9b\u202e\r\x00" if c in printed]
            leaked = [s for s in ("LTAI5tAbCdEfGhIjKlMnOpQr", "abcdefgh1234", *TOKEN.values()) if s in printed]
            surface.record(outcome, actions=[f"printed {raw!r} raw" for _ in raw[:1]]
                           + [f"printed the credential {s}" for s in leaked])
            if "--json" in argv and outcome.code == 0:
                json.loads(outcome.out)  # still a valid document
    surface.assert_clean(minimum=len(hostile) * 3)
