"""Reading the catalog data files shipped inside the package."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml
from pydantic import ValidationError

from toolkit.catalog.models import Catalog
from toolkit.errors import GpuctlError
from toolkit.vocabulary import PROVIDERS


@cache
def load_catalog(provider: str) -> Catalog:
    if provider not in PROVIDERS:
        raise GpuctlError(f"no catalog for provider '{provider}'; known: {', '.join(PROVIDERS)}")
    text = resources.files("toolkit.catalog").joinpath("data", f"{provider}.yaml").read_text("utf-8")
    try:
        return Catalog.model_validate(yaml.safe_load(text))
    except ValidationError as exc:  # a broken shipped file is a bug in gpuctl, say where
        raise GpuctlError(f"catalog data for {provider} is invalid (a gpuctl bug): {exc}") from None
