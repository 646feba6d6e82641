"""Cluster lifecycle on the operator's side: what the node-side agent (playbooks/roles/lifecycle) is told."""
