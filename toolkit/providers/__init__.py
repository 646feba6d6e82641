"""Providers: one module per cloud (and the local lab) behind one interface (see base.py)."""
