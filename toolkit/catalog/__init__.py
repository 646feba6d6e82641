"""The instance catalog: what each cloud sells, as data with a source and date on every row."""

from toolkit.catalog.models import Catalog, InstanceType
from toolkit.catalog.store import load_catalog

__all__ = ["Catalog", "InstanceType", "load_catalog"]
