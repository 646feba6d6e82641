"""The words every command shares, importable without pydantic (so `gpuctl --help` stays fast).

The provider and fabric words are defined here once, as Literal types; `toolkit.spec.models`
validates specs with these very types (`Provider`, `Fabric`), and the tuples below are their values.
"""

from __future__ import annotations

from typing import Literal, get_args

FabricName = Literal["erdma", "rdma", "tcp"]
ProviderName = Literal["alicloud", "tencentcloud", "local"]

FABRICS: tuple[str, ...] = get_args(FabricName)
PROVIDERS: tuple[str, ...] = get_args(ProviderName)

# A cluster's name: a DNS label, short enough to prefix every cloud resource name ("<name>-gpu-0-sg" ...).
# The spec validates it (toolkit.spec.models.ClusterName) and the gpuctl home makes directories of nothing
# else (toolkit.state.check_cluster_name), whatever a state file or a cloud tag says.
CLUSTER_NAME_PATTERN = r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"
# A region or zone id as both clouds write them (cn-wulanchabu, ap-shanghai-fsi, ap-shanghai-5): the
# spec's rule and the cloud calls' (providers/cloud_api.py REGION_ID).
REGION_ID_PATTERN = r"[a-z]{2}-[a-z0-9-]{1,60}"
# An NCCL variable's name as the spec and `tune --set` take it: NCCL_, then capitals, digits and '_'.
NCCL_VARIABLE_PATTERN = r"^NCCL_[A-Z0-9_]+$"
NCCL_VARIABLE_MAX = 128
# `gpuctl hostfile --format`: the launchers whose form it writes (toolkit/jobs/hostfile.py).
HostfileFormat = Literal["mpirun", "deepspeed", "torchrun", "plain"]
HOSTFILE_FORMATS: tuple[str, ...] = get_args(HostfileFormat)
