"""Hostile-input corpus: the price cache and the exchange-rate file in the gpuctl home, through plan, choose and
prices refresh.

Generated contents for `$GPUCTL_HOME/prices.json` and `$GPUCTL_HOME/exchange_rate.json`: bytes that
are not UTF-8, times without a zone or from year 9999, NaN / infinity / negative / 1e308 / a
400-digit integer in every number, each field of the wrong type, nesting 50,000 deep, a file past
the size cap, and things that are not a file at all (a FIFO, a symlink, a directory). Each runs
through the real CLI (`run_case`): `plan` reads both files, `choose` and `prices refresh` the cache
(refresh against the fake Alibaba API on loopback, so a cache it accepts sends nothing elsewhere).
Counted: internal errors, hangs, leaks; and a broken promise when a file gpuctl must refuse is
accepted (exit 0), a refusal is not exit 2 naming the file, or NaN / Infinity / 1e+308 is printed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud import alibaba
from tests.hostile.harness import CANARIES, run_case, tally
from tests.reap.conftest import REPO

pytestmark = pytest.mark.fake_cloud

SURFACE = "caches"
REGION, ITYPE = "cn-wulanchabu", "ecs.ebmgn7ex.32xlarge"
DROP = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "GPUCTL_CNY_PER_USD",
        "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")
ENTRY: dict[str, Any] = {
    "provider": "alicloud", "region": REGION, "zone": None, "instance_type": ITYPE, "billing": "pay_as_you_go",
    "currency": "CNY", "value": 108.0, "list_value": 120.0, "system_disk": "cloud_essd 200 GiB",
    "system_disk_per_hour": 0.2, "history": [], "read_at": "2026-12-01T10:00:00Z",
    "source": "live: Alibaba DescribePrice"}
SPOT: dict[str, Any] = {**ENTRY, "zone": "cn-wulanchabu-c", "billing": "spot", "value": 31.25, "list_value": None,
                        "history": [{"at": "2026-12-01T09:00:00Z", "value": 31.25}], "interruption_rate": "0-3%",
                        "interruption_average_percent": 1.5, "spot_average_percent": 26.0,
                        "interruption_source": "live: Alibaba DescribeSpotAdvice, last 30 days"}
RATE: dict[str, Any] = {"cny_per_usd": 7.1, "as_of": "2026-12-01", "source": "my bank"}
DEEP = "[" * 50_000 + "]" * 50_000
BAD_NUMBERS: list[tuple[str, str]] = [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"),
                                      ("negative", "-1.5"), ("1e308", "1e308"), ("1e309", "1e309"),
                                      ("400 digits", "9" * 400)]


def cache_text(entries: list[dict[str, Any]], **top: Any) -> str:
    return json.dumps({"version": 1, "entries": entries, **top})


def with_number(entry: dict[str, Any], path: tuple[Any, ...], literal: str) -> str:
    """The cache with the number at `path` (inside one entry) replaced by a JSON literal as written."""
    marker = "__NUMBER__"
    changed = json.loads(json.dumps(entry))
    target = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = marker
    return cache_text([changed]).replace(f'"{marker}"', literal)


# (label, file, contents or a maker of the thing at the path, whether a run may accept it)
Case = tuple[str, str, "str | bytes | Callable[[Path], None]", bool]


def cases() -> list[Case]:
    found: list[Case] = [("a valid cache", "prices.json", cache_text([ENTRY, SPOT]), True),
                         ("a valid rate", "exchange_rate.json", json.dumps(RATE), True)]
    for label, literal in BAD_NUMBERS:
        found.append((f"value {label}", "prices.json", with_number(ENTRY, ("value",), literal), False))
    for path in (("list_value",), ("system_disk_per_hour",), ("history", 0, "value"), ("interruption_average_percent",),
                 ("spot_average_percent",)):
        for label, literal in (("NaN", "NaN"), ("negative", "-7"), ("1e308", "1e308")):
            found.append((f"{'.'.join(map(str, path))} {label}", "prices.json", with_number(SPOT, path, literal),
                          False))
    for label, stamp in (("no zone", "2026-12-01T10:00:00"), ("year 9999", "9999-12-31T23:59:59Z"),
                         ("9999 west of UTC", "9999-12-31T23:59:59-14:00"), ("year 1", "0001-01-01T00:00:00Z"),
                         ("not a time", "yesterday")):
        found.append((f"read_at {label}", "prices.json", cache_text([{**ENTRY, "read_at": stamp}]), False))
        found.append((f"history at {label}", "prices.json",
                      cache_text([{**SPOT, "history": [{"at": stamp, "value": 1.0}]}]), False))
    for field, value in (("value", "108"), ("value", None), ("value", [108]), ("billing", "hourly"),
                         ("provider", 7), ("history", "none"), ("read_at", 1764583200), ("zone", {"a": 1})):
        found.append((f"{field} of the wrong type {value!r}"[:60], "prices.json",
                      cache_text([{**ENTRY, field: value}]), False))
    found += [
        ("not UTF-8", "prices.json", b'{"version": 1, "entries": [\xff\xfe]}', False),
        ("empty", "prices.json", b"", False),
        ("null", "prices.json", "null", False),
        ("a list at the top", "prices.json", "[]", False),
        ("version 10**400", "prices.json", '{"version": ' + "1" * 400 + ', "entries": []}', False),
        ("entries nested 50,000 deep", "prices.json", '{"version": 1, "entries": ' + DEEP + "}", False),
        ("an entry nested 50,000 deep", "prices.json", cache_text([{**ENTRY, "note": "x"}]).replace('"x"', DEEP),
         False),
        ("17 MiB", "prices.json", sized(cache_text([ENTRY]), 17 * 1024 * 1024), False),
        ("3 MiB of valid entries", "prices.json",
         cache_text([{**ENTRY, "instance_type": f"ecs.t{n}"} for n in range(6000)]), True),
        ("a FIFO", "prices.json", lambda path: os.mkfifo(path), False),
        ("a symlink to a valid cache", "prices.json", symlink_to(cache_text([ENTRY])), False),
        ("a directory", "prices.json", lambda path: path.mkdir(), False),
        ("a NUL in a name", "prices.json", cache_text([{**ENTRY, "instance_type": "ecs.\u0000x\u001b[2J"}]), True),
    ]
    for label, text in (("rate NaN", '{"cny_per_usd": NaN, "as_of": "x", "source": "y"}'),
                        ("rate 1e308", '{"cny_per_usd": 1e308, "as_of": "x", "source": "y"}'),
                        ("rate negative", '{"cny_per_usd": -7, "as_of": "x", "source": "y"}'),
                        ("rate 400 digits", '{"cny_per_usd": ' + "9" * 400 + ', "as_of": "x", "source": "y"}'),
                        ("rate as text", '{"cny_per_usd": "7.1", "as_of": "x", "source": "y"}'),
                        ("rate nested deep", '{"cny_per_usd": 7.1, "as_of": ' + "[" * 20_000 + "]" * 20_000 + "}"),
                        ("rate not UTF-8", "\udcff"), ("rate empty", "")):
        found.append((label, "exchange_rate.json", text.encode("utf-8", "surrogateescape"), False))
    found += [("rate as a FIFO", "exchange_rate.json", lambda path: os.mkfifo(path), False),
              ("rate as a symlink", "exchange_rate.json", symlink_to(json.dumps(RATE)), False)]
    return found


def sized(text: str, size: int) -> Callable[[Path], None]:
    """`text` in a file of `size` bytes (sparse: the rest reads as NUL bytes, and costs no disk)."""
    def make(path: Path) -> None:
        path.write_text(text)
        os.truncate(path, size)
    return make


def symlink_to(text: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        target = path.parent.parent / f"elsewhere-{path.name}"
        target.write_text(text)
        path.symlink_to(target)
    return make


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from toolkit.providers import cloud_api

    monkeypatch.setattr(cloud_api, "LIMITS", cloud_api.Limits(
        timeout_s=0.5, retry=cloud_api.RetryPolicy(tries=1), deadline_s=2.0))
    monkeypatch.chdir(REPO)
    cloud = alibaba.FakeAlibabaCloud(keys={CANARIES["ALICLOUD_ACCESS_KEY"]: CANARIES["ALICLOUD_SECRET_KEY"]}, offers=[
        alibaba.Offer(REGION, ITYPE, pay_as_you_go=120.0, discount=12.0, disk_per_gib_hour={"cloud_essd": 0.001})])
    with alibaba.serve(cloud) as url:
        yield url


COMMANDS: dict[str, list[str]] = {
    "plan": ["plan", "--json", "examples/alicloud-erdma-2x8.yaml"],
    "choose": ["choose", "--gpu-memory", "80", "--gpus-per-node", "8", "--hours", "10", "--json"],
    "prices refresh": ["prices", "refresh", "--provider", "alicloud", "--region", REGION, "--instance-type", ITYPE],
}
SHOWN = ("NaN", "Infinity", "1e+308")


def test_caches_corpus(fake: str, tmp_path: Path) -> None:
    record = tally(SURFACE)
    broken: list[str] = []
    number = 0
    for label, name, contents, acceptable in cases():
        for command, argv in COMMANDS.items():
            if name == "exchange_rate.json" and command != "plan":
                continue  # only plan converts to USD: choose and refresh read no rate
            number += 1
            home = tmp_path / f"case{number}" / "home"
            home.mkdir(parents=True)
            path = home / name
            if callable(contents):
                contents(path)
            else:
                path.write_bytes(contents if isinstance(contents, bytes) else contents.encode())
            outcome = run_case(f"{label} / {command}", argv, home=home, env={"GPUCTL_ALICLOUD_ENDPOINT": fake},
                               drop=DROP, timeout=8.0)
            record.record(outcome)
            if not acceptable and outcome.code == 0:
                broken.append(f"{label} / {command}: accepted (exit 0)")
            if outcome.code not in (0, 2):
                broken.append(f"{label} / {command}: exit {outcome.code}, not a refusal of the file (2)")
            if any(word in outcome.out for word in SHOWN):
                broken.append(f"{label} / {command}: a figure no price is was shown")
            if outcome.code == 2 and name not in outcome.err:
                broken.append(f"{label} / {command}: the refusal does not name the file")
    record.assert_clean(minimum=120)
    assert broken == [], "\n".join(broken)
