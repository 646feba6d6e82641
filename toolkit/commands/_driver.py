"""The `--backend URL` option of the commands that reach a cluster, and the driver it selects."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolkit.providers.base import ProviderDriver
    from toolkit.spec.models import ClusterSpec


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend", metavar="URL", default=None,
        help="Pulumi state backend for cloud clusters (s3://bucket/path, OSS via "
        "s3://bucket?endpoint=oss-<region>.aliyuncs.com, https://api.pulumi.com); default "
        "$GPUCTL_PULUMI_BACKEND, else a local file backend in the gpuctl directory. "
        "Credentials come from the environment, never the URL",
    )


def driver_for(spec: ClusterSpec, args: argparse.Namespace) -> ProviderDriver:
    from toolkit import hints
    from toolkit.providers.registry import get_driver

    # The driver's hints ("run `gpuctl down SPEC` again") name the spec and backend given here.
    hints.remember_spec(spec.name, args.spec, getattr(args, "backend", None))
    return get_driver(spec.provider, backend_url=getattr(args, "backend", None))
