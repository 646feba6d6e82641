"""Every catalog name is one a source listing that cloud's types shows (tests/catalog/listings.yaml,
names copied from the sources), and both clouds' rows speak one vocabulary: NVIDIA model names a
`choose --gpu` word finds on either cloud, bandwidths in Gbit/s."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolkit.catalog import load_catalog
from toolkit.choose.offers import gpu_matches

LISTINGS = yaml.safe_load((Path(__file__).parent / "listings.yaml").read_text())
PROVIDERS = ("alicloud", "tencentcloud")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_catalog_name_is_in_a_source_listing_or_said_to_be_derived(provider: str) -> None:
    listed = {name for listing in LISTINGS[provider] for name in listing["names"]}
    derived = set(LISTINGS["derived"].get(provider, []))
    names = {row.name for row in load_catalog(provider).instance_types}
    assert names - listed - derived == set()
    assert derived <= names  # a derived name the catalog dropped is taken out of the list too
    for name in derived:
        row = load_catalog(provider).find(name)
        assert row is not None
        assert row.notes is not None
        assert "Name derived" in row.notes


@pytest.mark.parametrize(("word", "clouds"), [
    ("A10", {"alicloud", "tencentcloud"}),
    ("T4", {"alicloud", "tencentcloud"}),
    ("V100", {"alicloud", "tencentcloud"}),
    ("A100", {"alicloud", "tencentcloud"}),
    ("H20", {"tencentcloud"}),
    ("L20", {"alicloud"}),
])
def test_one_gpu_word_finds_the_same_gpu_on_both_clouds(word: str, clouds: set[str]) -> None:
    found = {provider for provider in PROVIDERS for row in load_catalog(provider).instance_types
             if row.gpu is not None and gpu_matches(word, row.gpu.model)}
    assert found == clouds


@pytest.mark.parametrize("provider", PROVIDERS)
def test_models_are_nvidia_names_and_bandwidths_are_gbit_per_second(provider: str) -> None:
    for row in load_catalog(provider).instance_types:
        assert row.gpu is not None, row.name
        assert row.gpu.model.startswith("NVIDIA "), row.name
        # Gbit/s everywhere: per-instance VPC bandwidth below 1 Tbit/s, RDMA at most 3.2 Tbit/s.
        assert row.network_gbps is None or 0 < row.network_gbps < 1000, row.name
        assert row.rdma is None or row.rdma.gbps is None or 0 < row.rdma.gbps <= 3200, row.name
