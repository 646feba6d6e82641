"""The cluster spec: pydantic models and YAML loading with file:line error messages."""

from toolkit.spec.loader import load_spec, load_spec_text
from toolkit.spec.models import ClusterSpec

__all__ = ["ClusterSpec", "load_spec", "load_spec_text"]
