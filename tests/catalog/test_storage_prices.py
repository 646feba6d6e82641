"""The shared-storage price file: it loads, every row cites a page and a date, every class gpuctl can
create has a row, the figures are what the pages say (written out here, never read back), and `down`
names the monthly price of what it kept."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from tests.providers.test_alicloud_driver import CLUSTER, OUR_ID, StackRecord, fake_pulumi, spec
from tests.providers.test_storage_driver import StorageAutomation, with_storage
from toolkit.catalog.storage_prices import (
    StoragePrice,
    created_class,
    kept_price_note,
    load_storage_prices,
    volume_price,
)
from toolkit.providers.alicloud.driver import AlicloudDriver
from toolkit.spec.models import STORAGE_TYPES, ClusterSpec, StorageVolume

pytestmark = pytest.mark.unit
__all__ = ["fake_pulumi", "spec"]  # fixtures, imported


def _row(provider: str, kind: str, storage_class: str) -> StoragePrice:
    row = load_storage_prices().find(provider, kind, storage_class)
    assert row is not None, f"no price row for {provider} {kind} {storage_class}"
    return row


def _volume(**fields: Any) -> StorageVolume:
    return StorageVolume.model_validate({"name": "data", "mount_path": "/mnt/data", **fields})


def test_every_row_cites_a_page_and_a_date_and_rows_are_unique() -> None:
    rows = load_storage_prices().prices
    assert len(rows) == 6
    for row in rows:
        assert row.source.url.scheme == "https", row
        assert row.source.read == date(2026, 12, 1), row
        assert row.source.note, row  # what the page said, or what was searched when it said nothing
    keys = [(r.provider, r.kind, r.storage_class) for r in rows]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("provider", sorted(STORAGE_TYPES))
def test_every_class_gpuctl_creates_has_a_row(provider: str) -> None:
    for storage_class in STORAGE_TYPES[provider]:
        assert volume_price(provider, _volume(kind="nas", storage_type=storage_class)) is not None
    assert volume_price(provider, _volume(kind="object")) is not None


def test_the_figures_are_what_the_pages_say() -> None:
    capacity = _row("alicloud", "nas", "Capacity")
    assert (capacity.per_month, capacity.unit, capacity.currency, capacity.region) == (0.06, "GiB", "USD",
                                                                                        "cn-hangzhou")
    performance = _row("alicloud", "nas", "Performance")
    assert performance.per_month is None  # no public page found: unknown, never guessed
    assert str(performance.source.url) == "https://www.alibabacloud.com/product/nas/pricing"
    oss = _row("alicloud", "object", "Standard")
    assert (oss.per_month, oss.unit, oss.currency, oss.internal_traffic_free) == (0.12, "GB", "CNY", True)
    sd, hp = _row("tencentcloud", "nas", "SD"), _row("tencentcloud", "nas", "HP")
    assert (sd.per_month, sd.unit, sd.currency) == (0.35, "GiB", "CNY")
    assert (hp.per_month, hp.unit, hp.currency) == (1.6, "GiB", "CNY")
    cos = _row("tencentcloud", "object", "Standard")
    assert (cos.per_month, cos.unit, cos.currency, cos.internal_traffic_free) == (0.024, "GB", "USD", None)


def test_per_gib_and_per_tib_month() -> None:
    # GiB prices: x 1024 per TiB. GB prices: a GiB is 1.073741824 GB (the page's GB taken as 10^9 bytes).
    assert _row("alicloud", "nas", "Capacity").per_tib_month() == pytest.approx(61.44)
    assert _row("tencentcloud", "nas", "SD").per_tib_month() == pytest.approx(358.4)
    assert _row("tencentcloud", "nas", "HP").per_tib_month() == pytest.approx(1638.4)
    oss = _row("alicloud", "object", "Standard")
    assert oss.per_gib_month() == pytest.approx(0.128849019)
    assert oss.per_tib_month() == pytest.approx(131.941395, abs=1e-5)
    assert _row("tencentcloud", "object", "Standard").per_tib_month() == pytest.approx(26.388279, abs=1e-5)
    assert _row("alicloud", "nas", "Performance").per_tib_month() is None
    assert oss.list_price() == "0.12 CNY/GB-month"
    assert _row("alicloud", "nas", "Performance").list_price() == "unknown"


def test_the_class_of_a_volume() -> None:
    assert created_class("alicloud", _volume(kind="nas")) == "Performance"  # the spec's default
    assert created_class("tencentcloud", _volume(kind="nas")) == "SD"
    assert created_class("alicloud", _volume(kind="nas", storage_type="Capacity")) == "Capacity"
    assert created_class("alicloud", _volume(kind="object")) == "Standard"
    assert created_class("alicloud", _volume(kind="nas", existing="0a1b2c3d4e")) is None
    assert volume_price("alicloud", _volume(kind="object", existing="team-corpus")) is None
    assert volume_price("local", _volume(kind="object")) is None  # the lab's store: no price row


def test_kept_price_note() -> None:
    assert kept_price_note("alicloud", _volume(kind="nas", storage_type="Capacity")) == (
        " (about 61.44 USD per TiB stored per month: Capacity list price for cn-hangzhou, read 2026-12-01)"
    )
    assert kept_price_note("tencentcloud", _volume(kind="nas", storage_type="HP")) == (
        " (about 1,638.40 CNY per TiB stored per month: HP list price for mainland China (0-32 TiB), "
        "read 2026-12-01)"
    )
    assert kept_price_note("alicloud", _volume(kind="nas")) == ""  # Performance: price unknown, nothing said
    assert kept_price_note("alicloud", _volume(kind="nas", existing="0a1b2c3d4e")) == ""


def test_down_says_what_a_kept_volume_costs_per_tib(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = StorageAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID})
    automation.stacks[f"{CLUSTER}_storage"] = StackRecord(config={"gpuctl:clusterId": "a1b2c3d4e5f6"})
    driver = AlicloudDriver()
    capacity = {"name": "data", "kind": "nas", "mount_path": "/mnt/data", "storage_type": "Capacity"}
    performance = {"name": "scratch", "kind": "nas", "mount_path": "/mnt/scratch"}
    driver.down(with_storage(spec, capacity, performance), lambda _line: None)
    assert driver.kept == [
        "kept data (nas, /mnt/data): it bills until removed (about 61.44 USD per TiB stored per month: "
        "Capacity list price for cn-hangzhou, read 2026-12-01)",
        "kept scratch (nas, /mnt/scratch): it bills until removed",  # Performance: no public price found
    ]
