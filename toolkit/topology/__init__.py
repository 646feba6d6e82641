"""Topology detection: pure parsers (text in, model out) and the `Topology` model they fill."""
