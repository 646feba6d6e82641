"""What check-log and report print from hostile input passes the one output path (toolkit/output.py):
credentials redacted (the environment's and well-known forms), terminal escapes neutralised, in
text and in --json. The path is the base's; these tests hold check-log and report to it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.test_report_safety import _doc
from tests.conftest import REPO
from tests.hostile.harness import CANARIES, run_case
from toolkit.errors import EXIT_PARSE

LOG = REPO / "tests" / "captures" / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"
# One line per way a credential or an escape reaches what check-log prints: the environment a
# line quotes (summary.env), a WARN line's text (findings, evidence), and a host name.
HOSTILE_LINES = (
    f"vm-host40:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {CANARIES['ALICLOUD_SECRET_KEY']}\n"
    "vm-host40:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to LTAI5tAbCdEfGhIjKlMnOp\n"
    "vm-host40:1:1 [0] NCCL WARN TENCENTCLOUD_SECRET_KEY=plainLogSecret99 \x1b]0;retitled\x07\x1b[2J\u202eevil\n"
)


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.log"
    path.write_text(LOG.read_text() + HOSTILE_LINES)
    return path


def test_check_log_json_prints_no_credential_and_no_escape(tmp_path: Path) -> None:
    outcome = run_case("check-log --json", ["check-log", "--json", str(_log(tmp_path))], home=tmp_path / "home")
    assert outcome.leaks == []
    assert not outcome.internal
    document = json.loads(outcome.out)
    env = document["summary"]["env"]
    assert (env["NCCL_SOCKET_IFNAME"], env["NCCL_IB_HCA"]) == ("<ALICLOUD_SECRET_KEY>", "<Alibaba AccessKey id>")
    assert "plainLogSecret99" not in outcome.out
    assert "TENCENTCLOUD_SECRET_KEY=<redacted> \\u001b]0;retitled\\u0007\\u001b[2J\\u202eevil" in outcome.out
    assert "\x1b" not in outcome.out
    assert "\u202e" not in outcome.out


def test_check_log_text_prints_no_credential_and_no_escape(tmp_path: Path) -> None:
    outcome = run_case("check-log", ["check-log", str(_log(tmp_path))], home=tmp_path / "home")
    assert outcome.leaks == []
    assert not outcome.internal
    printed = outcome.out + outcome.err
    assert "warning: [nccl-warn] NCCL WARN TENCENTCLOUD_SECRET_KEY=<redacted> \\u001b]0;retitled\\u0007" \
           "\\u001b[2J\\u202eevil" in printed
    assert "plainLogSecret99" not in printed
    assert "LTAI5tAbCdEfGhIjKlMnOp" not in printed
    assert "\x1b" not in printed


def test_report_errors_print_no_credential_and_no_escape(tmp_path: Path) -> None:
    # A key the schema does not know is named in the error: the one place a results.json string is printed.
    doc = _doc()
    meta = doc["meta"]
    assert isinstance(meta, dict)
    meta[f"\x1b]0;t\x07{CANARIES['ALICLOUD_ACCESS_KEY']}"] = 1
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(doc))
    outcome = run_case("report", ["report", str(run), "-o", str(tmp_path / "out")], home=tmp_path / "home")
    assert outcome.code == EXIT_PARSE
    assert outcome.leaks == []
    assert outcome.err == (f"gpuctl report: error: {run / 'results.json'}: does not match the results.json schema: "
                           "meta.\\u001b]0;t\\u0007<ALICLOUD_ACCESS_KEY>: Extra inputs are not permitted\n"
                           "  hint: docs/schemas/results.schema.json describes the file\n")
