"""CNY and USD together: the dated default rate, the user's own (environment or file), bad values refused;
the plan's text and JSON show both, and the rest of the bill as notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.errors import EXIT_USAGE, UsageError
from toolkit.prices.currency import DEFAULT_RATE, ENV, current_rate

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
GT4 = "examples/tencentcloud-gt4-spot.yaml"  # the one example with a catalog price (GT4, spot ceiling 120 CNY)


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(REPO)
    return tmp_path / "home"


def test_the_default_rate_is_dated_and_cited() -> None:
    rate = current_rate()
    assert rate == DEFAULT_RATE
    assert (rate.cny_per_usd, rate.as_of) == (7.2734, "2025-02 (monthly average)")
    assert "https://alfred.stlouisfed.org/series?seid=EXCHUS" in rate.source
    assert rate.usd(240.0) == 33.0


def test_the_environment_sets_the_rate_and_its_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "7.5@2026-12-01")
    rate = current_rate()
    assert (rate.cny_per_usd, rate.as_of, rate.source) == (7.5, "2026-12-01", f"set by {ENV}")
    monkeypatch.setenv(ENV, "8")
    assert current_rate().as_of == "date not given"


@pytest.mark.parametrize("bad", ["seven", "0", "-7.1", "nan", "inf"])
def test_a_bad_rate_in_the_environment_is_refused_naming_it(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(UsageError, match=f"^{ENV}: "):
        current_rate()


def test_the_rate_file_in_the_gpuctl_home_is_read_and_a_bad_one_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(parents=True)
    path = home / "exchange_rate.json"
    path.write_text('{"cny_per_usd": 7.0, "as_of": "2026-11-30", "source": "my bank"}')
    rate = current_rate()
    assert (rate.cny_per_usd, rate.as_of, rate.source) == (7.0, "2026-11-30", f"my bank (from {path})")
    path.write_text('{"cny_per_usd": -1, "as_of": "2026-11-30", "source": "my bank"}')
    with pytest.raises(UsageError, match=r"exchange rate file .* is not valid \(cny_per_usd\)"):
        current_rate()


def test_plan_json_and_text_show_cny_and_usd_with_the_rate_date(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(ENV, "8@2026-12-01")
    assert main(["plan", "--json", GT4]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    assert (cost["per_hour"], cost["per_hour_usd"]) == (240.0, 30.0)
    assert (cost["pay_as_you_go_per_hour"], cost["pay_as_you_go_per_hour_usd"]) == (475.02, 59.38)
    assert (cost["for_ttl"], cost["for_ttl_usd"]) == (1440.0, 180.0)
    assert cost["pools"][0]["per_hour_usd"] == 30.0
    assert cost["exchange_rate"] == {"cny_per_usd": 8.0, "as_of": "2026-12-01", "source": f"set by {ENV}"}
    assert main(["plan", GT4]) == 0
    text = capsys.readouterr().out
    assert "  per hour: 240.00 CNY ($30.00)  (all pay-as-you-go: 475.02 CNY ($59.38))\n" in text
    assert f"  USD at 1 USD = 8 CNY (rate of 2026-12-01; set by {ENV}); set your own with {ENV}\n" in text


def test_a_bad_rate_makes_plan_exit_with_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(ENV, "seven")
    assert main(["plan", GT4]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{ENV}: 'seven' is not a positive number of CNY per USD" in err
    assert "Traceback" not in err


def test_plan_notes_the_rest_of_the_bill_and_how_to_get_a_missing_price(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--json", "examples/tencentcloud-hcc-2x8.yaml"]) == 0
    notes = json.loads(capsys.readouterr().out)["cost"]["notes"]
    assert notes[0].startswith("system disks (gpu: 2 x 500 GiB CLOUD_BSSD) are billed apart from the instance")
    assert "egress to the internet 0.80 CNY/GB in mainland China" in notes[1]
    assert "github.com/tencentyun/qcloud-documents/blob/2efa60a6ba34cc902955252d966f526ac6eb42d3/" in notes[1]
    assert main(["plan", "examples/alicloud-erdma-2x8.yaml"]) == 0
    text = capsys.readouterr().out
    assert "the catalog has no price for pool(s) gpu: totals are unknown, not zero" in text
    assert "get the live price (needs the cloud's credentials): " in text
    assert "prices refresh --provider alicloud --region cn-wulanchabu\n" in text
    assert "no public Alibaba page with the per-GB egress price was found" in text
    assert main(["plan", "--json", "examples/local-lab.yaml"]) == 0
    lab = json.loads(capsys.readouterr().out)["cost"]
    assert (lab["notes"], lab["exchange_rate"], lab["per_hour_usd"]) == ([], None, None)


def test_a_tencent_pool_without_a_disk_category_is_not_billed_as_alibabas_default() -> None:
    from toolkit.prices.bill import bill_notes
    from toolkit.spec.loader import load_spec_text

    text = Path("examples/tencentcloud-hcc-2x8.yaml").read_text()
    named = load_spec_text(text, source="named.yaml")
    assert bill_notes(named)[0].startswith("system disks (gpu: 2 x 500 GiB CLOUD_BSSD) are billed")
    unnamed = named.model_copy(update={"node_pools": [
        pool.model_copy(update={"system_disk": type(pool.system_disk)(size_gb=500)}) for pool in named.node_pools]})
    assert bill_notes(unnamed)[0].startswith(
        "system disks (gpu: 2 x 500 GiB (the type Tencent has in stock: the spec names none)) are billed")


def test_a_tencent_plan_prices_its_system_disks_from_the_cbs_table_and_the_monthly_break_even(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "examples" / "tencentcloud-gt4-storage.yaml").read_text()
    assert "category: CLOUD_BSSD" in text
    spec = tmp_path / "gt4.yaml"
    spec.write_text(text.replace("category: CLOUD_BSSD", "category: CLOUD_PREMIUM")
                    .replace("public_key: ssh/", f"public_key: {repo / 'examples' / 'ssh'}/"))
    assert main(["plan", "--json", str(spec)]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    # Tencent's CBS table, ap-shanghai 高性能云硬盘 0.0009 CNY/GB-hour: 2 nodes x 300 GB = 0.54 CNY/h.
    assert (cost["system_disks_per_hour"], cost["per_hour_with_disks"]) == (0.54, 475.56)
    assert cost["system_disks_basis"].startswith("gpu: 2 x 300 GB CLOUD_PREMIUM x 0.0009 CNY/GB-h = 0.5400")
    # GT4.41XLARGE948's official list: 114016 CNY a month against 237.51 an hour.
    assert cost["pools"][0]["monthly_break_even_hours"] == 480.0
