"""Handing a configured cluster to the jobs that run on it (hostfile)."""
