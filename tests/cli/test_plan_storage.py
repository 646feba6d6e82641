"""`gpuctl plan` prices the shared volumes: per volume its class, whether gpuctl creates it, the price
per GiB-month with its source and date, and one month of 1 TiB stored as a labelled example. A
referenced volume costs gpuctl nothing, the lab's store is free, an unknown price stays unknown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolkit.cli import main

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))  # no price cache: the catalog's prices alone
    monkeypatch.chdir(REPO)


def plan_json(path: str | Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["plan", "--json", str(path)]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def plan_text(path: str | Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["plan", str(path)]) == 0
    return capsys.readouterr().out


def spec_with_storage(tmp_path: Path, example: str, storage: list[dict[str, Any]]) -> Path:
    """An example spec with `storage` swapped in, written beside a copy of its SSH key."""
    data = yaml.safe_load((REPO / "examples" / example).read_text())
    key = REPO / "examples" / data["ssh"]["public_key"]
    (tmp_path / "ssh").mkdir(exist_ok=True)
    (tmp_path / data["ssh"]["public_key"]).write_text(key.read_text())
    data["storage"] = storage
    path = tmp_path / example
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_storage_example_prices_each_volume(capsys: pytest.CaptureFixture[str]) -> None:
    storage = plan_json("examples/alicloud-erdma-2x8-storage.yaml", capsys)["storage"]
    assert storage == [
        {
            "volume": "data", "kind": "nas", "storage_class": "Capacity", "created": True, "keep_on_down": True,
            "basis": "pay-as-you-go list price per GiB stored", "list_price": "0.06 USD/GiB-month",
            "price_per_gib_month": 0.06, "currency": "USD", "price_region": "cn-hangzhou",
            "price_source": "https://www.alibabacloud.com/help/doc-detail/178365.htm", "price_read": "2026-12-01",
            "billing": "pay-as-you-go, the hour's peak storage usage x monthly price / 30 / 24",
            "internal_traffic_free": None, "example_per_tib_month": 61.44, "example_per_tib_month_usd": 61.44,
        },
        {
            "volume": "ckpt", "kind": "object", "storage_class": "Standard", "created": True, "keep_on_down": True,
            "basis": "pay-as-you-go list price per GiB stored", "list_price": "0.12 CNY/GB-month",
            "price_per_gib_month": 0.1288, "currency": "CNY",
            "price_region": "mainland China (the page names no region)",
            "price_source": "https://help.aliyun.com/en/oss/storage-fees", "price_read": "2026-12-01",
            "billing": "pay-as-you-go, Standard locally redundant (LRS) storage, settled hourly (price / 30 / 24)",
            "internal_traffic_free": True,
            "example_per_tib_month": 131.94,
            "example_per_tib_month_usd": 18.14,  # 131.94 / 7.2734, the default dated rate
        },
    ]


def test_the_storage_example_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    text = plan_text("examples/alicloud-erdma-2x8-storage.yaml", capsys)
    section = text.split("Storage (billed by what is stored, so not in the totals above):\n")[1].split("\n\n")[0]
    assert section.splitlines() == [
        "  data: nas Capacity, kept by down: 0.06 USD/GiB-month",
        "    example, not a forecast: 1 TiB stored for a month = 61.44 USD",
        "    price for cn-hangzhou, read 2026-12-01: https://www.alibabacloud.com/help/doc-detail/178365.htm",
        "  ckpt: object Standard, kept by down: 0.1288 CNY/GiB-month (the page: 0.12 CNY/GB-month)",
        "    example, not a forecast: 1 TiB stored for a month = 131.94 CNY ($18.14)",
        "    traffic from the cluster over the internal endpoint: free",
        "    price for mainland China (the page names no region), read 2026-12-01: "
        "https://help.aliyun.com/en/oss/storage-fees",
    ]


def test_a_spec_without_storage_has_no_storage_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert "storage" not in plan_json("examples/alicloud-erdma-2x8.yaml", capsys)
    assert "Storage (" not in plan_text("examples/alicloud-erdma-2x8.yaml", capsys)


def test_a_referenced_volume_is_not_created_by_gpuctl_and_an_unknown_price_stays_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = spec_with_storage(tmp_path, "alicloud-erdma-2x8.yaml", [
        {"name": "corpus", "kind": "object", "mount_path": "/mnt/corpus", "existing": "team-corpus"},
        {"name": "data", "kind": "nas", "mount_path": "/mnt/data", "keep_on_down": False},  # Performance
    ])
    corpus, data = plan_json(path, capsys)["storage"]
    assert corpus["created"] is False
    assert corpus["storage_class"] is None
    assert corpus["basis"] == ("not created by gpuctl: referenced only, it adds nothing to this cluster's bill "
                               "(its owner pays for it)")
    assert (corpus["price_per_gib_month"], corpus["example_per_tib_month"]) == (None, None)
    assert (data["storage_class"], data["created"], data["keep_on_down"]) == ("Performance", True, False)
    assert (data["price_per_gib_month"], data["example_per_tib_month"], data["list_price"]) == (None, None, "unknown")
    assert data["price_source"] == "https://www.alibabacloud.com/product/nas/pricing"
    text = plan_text(path, capsys)
    assert ("  corpus: object, existing: not created by gpuctl: referenced only, it adds nothing to this "
            "cluster's bill (its owner pays for it)\n") in text
    assert ("  data: nas Performance, deleted by down: price unknown (no public page found); "
            "look at https://www.alibabacloud.com/product/nas/pricing\n") in text


def test_tencent_cfs_and_cos(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec_with_storage(tmp_path, "tencentcloud-hcc-2x8.yaml", [
        {"name": "data", "kind": "nas", "mount_path": "/mnt/data", "storage_type": "HP"},
        {"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"},
    ])
    data, ckpt = plan_json(path, capsys)["storage"]
    assert (data["storage_class"], data["price_per_gib_month"], data["currency"]) == ("HP", 1.6, "CNY")
    assert (data["example_per_tib_month"], data["example_per_tib_month_usd"]) == (1638.4, 225.26)  # 1638.4 / 7.2734
    assert data["price_region"] == "mainland China (0-32 TiB)"
    assert (ckpt["list_price"], ckpt["price_per_gib_month"], ckpt["currency"]) == ("0.024 USD/GB-month", 0.0258, "USD")
    assert (ckpt["example_per_tib_month"], ckpt["example_per_tib_month_usd"]) == (26.39, 26.39)
    assert ckpt["internal_traffic_free"] is None  # not found on a stored Tencent page


def test_the_lab_object_store_costs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    [ckpt] = plan_json("examples/local-lab-checkpoints.yaml", capsys)["storage"]
    assert ckpt["basis"] == "local lab: runs on this machine; its object store costs nothing"
    assert (ckpt["price_per_gib_month"], ckpt["example_per_tib_month"], ckpt["price_source"]) == (0.0, 0.0, None)
    text = plan_text("examples/local-lab-checkpoints.yaml", capsys)
    assert ("  ckpt: object Standard, kept by down: local lab: runs on this machine; its object store costs "
            "nothing\n") in text


def test_the_tencent_storage_example_prices_its_cfs_and_cos(capsys: pytest.CaptureFixture[str]) -> None:
    storage = plan_json("examples/tencentcloud-gt4-storage.yaml", capsys)["storage"]
    assert [(v["volume"], v["kind"], v["storage_class"], v["created"], v["keep_on_down"], v["list_price"])
            for v in storage] == [
        ("data", "nas", "SD", True, True, "0.35 CNY/GiB-month"),
        ("ckpt", "object", "Standard", True, True, "0.024 USD/GB-month"),
    ]
