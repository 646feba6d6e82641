"""Alibaba billing against the account's real rules (issue 21, items 5 and 6).

- The spot ceiling goes to RunInstances in the account's currency: CNY on the China site, USD on the
  international site ("China site: CNY. International site: USD.", alibabacloud-ecs20140526 7.11.8
  models/_describe_spot_price_history_response_body.py:18). The site is ALIBABA_CLOUD_ACCOUNT_TYPE,
  the variable the Pulumi provider reads too (terraform-provider-alicloud v1.289.0 provider.go:83-88);
  unset, gpuctl refuses rather than guess.
- Idle stop on a monthly (PrePaid) pool is refused: StopCharging does not apply to subscription
  instances and DeleteInstance does not release them before they expire.
- The spot notice is 5 minutes (models/_run_instances_request.py:451).

Expected values are written out: 5.0 CNY at 7.2734 CNY per USD is 0.68744... USD, sent as 0.687.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from toolkit.catalog import load_catalog
from toolkit.catalog.checks import check_spec
from toolkit.errors import EXIT_MISSING_TOOL, EXIT_USAGE, GpuctlError
from toolkit.prices.currency import ExchangeRate
from toolkit.providers.alicloud.args import GpuClusterArgs
from toolkit.providers.alicloud.driver import AlicloudDriver
from toolkit.spec.loader import load_spec_text

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
RATE = ExchangeRate(cny_per_usd=7.2734, as_of="2025-02 (monthly average)", source="test")
KEY = (Path(__file__).resolve().parent / "specs" / "test_ecdsa.pub").read_text()


def _spec_text(tmp_path: Path, billing: str, lifecycle: str = "ttl: 8h") -> str:
    key = tmp_path / "id.pub"
    key.write_text(KEY)
    return f"""\
name: t-lora
provider: alicloud
region: cn-hangzhou
zone: cn-hangzhou-i
node_pools:
  - name: gpu
    instance_type: ecs.gn7i-c8g1.2xlarge
    count: 1
    image: ubuntu_22_04
    billing: {billing}
network: {{fabric: tcp, mtu: 1500, admin_cidr: 10.0.0.0/8}}
ssh: {{public_key: {key}}}
lifecycle: {{{lifecycle}}}
"""


def _args(tmp_path: Path, env: dict[str, str]) -> GpuClusterArgs:
    spec = load_spec_text(_spec_text(tmp_path, "{mode: spot, spot_max_price_per_hour: 5.0}"))
    return GpuClusterArgs.from_spec(spec, load_catalog("alicloud"), now=NOW, public_key="ssh-rsa AAAA t",
                                    env=env, rate=RATE)


def test_on_the_international_site_the_ceiling_goes_in_usd_rounded_down(tmp_path: Path) -> None:
    billing = _args(tmp_path, {"ALIBABA_CLOUD_ACCOUNT_TYPE": "International"}).pools[0].billing
    assert (billing.spot_strategy, billing.spot_price_limit, billing.spot_price_currency) == \
        ("SpotWithPriceLimit", 0.687, "USD")


def test_on_the_china_site_the_ceiling_goes_as_given_and_the_value_is_case_blind(tmp_path: Path) -> None:
    billing = _args(tmp_path, {"ALIBABA_CLOUD_ACCOUNT_TYPE": "domestic"}).pools[0].billing
    assert (billing.spot_price_limit, billing.spot_price_currency) == (5.0, "CNY")


def test_without_the_account_type_the_ceiling_is_refused_not_guessed(tmp_path: Path) -> None:
    with pytest.raises(GpuctlError) as caught:
        _args(tmp_path, {})
    assert caught.value.exit_code == EXIT_MISSING_TOOL
    assert caught.value.message == (
        "billing.spot_max_price_per_hour is 5 CNY, but ALIBABA_CLOUD_ACCOUNT_TYPE is not set: gpuctl cannot tell "
        "whether the account prices in CNY (China site) or USD (international site), so it does not send the ceiling")
    assert caught.value.hint is not None
    assert "ALIBABA_CLOUD_ACCOUNT_TYPE=International" in caught.value.hint


def test_another_account_type_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(GpuctlError) as caught:
        _args(tmp_path, {"ALIBABA_CLOUD_ACCOUNT_TYPE": "intl"})
    assert caught.value.exit_code == EXIT_USAGE
    assert caught.value.message == "ALIBABA_CLOUD_ACCOUNT_TYPE='intl' is neither Domestic nor International"


def test_up_refuses_at_preflight_before_anything_is_created(tmp_path: Path) -> None:
    spec = load_spec_text(_spec_text(tmp_path, "{mode: spot, spot_max_price_per_hour: 5.0}"))
    (problem,) = AlicloudDriver().preflight_problems(spec, {})
    assert problem.startswith("billing.spot_max_price_per_hour is 5 CNY, but ALIBABA_CLOUD_ACCOUNT_TYPE is not set")
    assert AlicloudDriver().preflight_problems(spec, {"ALIBABA_CLOUD_ACCOUNT_TYPE": "International"}) == []
    no_ceiling = load_spec_text(_spec_text(tmp_path, "{mode: spot}"))
    assert AlicloudDriver().preflight_problems(no_ceiling, {}) == []


def test_validate_and_plan_say_what_is_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _spec_text(tmp_path, "{mode: spot, spot_max_price_per_hour: 5.0}")
    monkeypatch.setenv("GPUCTL_CNY_PER_USD", "7.2734@2025-02")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCOUNT_TYPE", "International")
    warnings = check_spec(load_spec_text(text), source="s.yaml").warnings
    assert "s.yaml: node_pools[0] (gpu).billing.spot_max_price_per_hour: spot ceiling 5 CNY/h sent as 0.687 USD/h " \
        "(ALIBABA_CLOUD_ACCOUNT_TYPE=International: international site, prices in USD; converted at 1 USD = " \
        "7.2734 CNY (rate of 2025-02; set by GPUCTL_CNY_PER_USD); rounded down to 3 decimals)" in warnings
    monkeypatch.delenv("ALIBABA_CLOUD_ACCOUNT_TYPE")
    warnings = check_spec(load_spec_text(text), source="s.yaml").warnings
    assert any(w.startswith("s.yaml: node_pools[0] (gpu).billing.spot_max_price_per_hour: billing.spot_max_price_"
                            "per_hour is 5 CNY, but ALIBABA_CLOUD_ACCOUNT_TYPE is not set") and
               w.endswith("; `up` refuses until it is set") for w in warnings), warnings


def test_idle_stop_on_a_monthly_pool_is_refused_with_the_reason(tmp_path: Path) -> None:
    text = _spec_text(tmp_path, "{mode: monthly, months: 1}", lifecycle="ttl: 8h, idle_stop_minutes: 30")
    problems = check_spec(load_spec_text(text), source="s.yaml").problems
    assert problems == [
        "s.yaml: node_pools[0] (gpu).billing: lifecycle.idle_stop_minutes with a monthly (PrePaid) pool: Alibaba's "
        "no-charge stop does not apply to subscription instances (StopInstance stops them and they keep billing) and "
        "DeleteInstance does not release them before they expire, so idle stop would only take the node down; remove "
        "lifecycle.idle_stop_minutes or bill the pool pay_as_you_go or spot"
    ]
    without = _spec_text(tmp_path, "{mode: monthly, months: 1}")
    assert check_spec(load_spec_text(without), source="s.yaml").problems == []


def test_a_spot_pool_is_told_alibabas_notice_is_five_minutes(tmp_path: Path) -> None:
    warnings = check_spec(load_spec_text(_spec_text(tmp_path, "{mode: spot}")), source="s.yaml").warnings
    assert "s.yaml: node_pools[0] (gpu).billing: Alibaba reclaims a spot instance with 5 minutes' notice (an ECS " \
        "system event and the metadata's instance/spot/termination-time); set lifecycle.on_interruption to " \
        "checkpoint in that window" in warnings


def test_no_document_says_two_minutes_of_alibaba_notice() -> None:
    repo = Path(__file__).resolve().parents[2]
    for path in (repo / "docs" / "lifecycle.md", repo / "playbooks" / "roles" / "lifecycle" / "defaults" / "main.yml"):
        assert "two minutes" not in path.read_text(), path
