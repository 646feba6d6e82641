"""`gpuctl image build SPEC --pool POOL [--name NAME]`, `gpuctl image list [--json]` and
`gpuctl image delete NAME`: baked images, that a pool's nodes start from with `image: baked:NAME`
(toolkit/images)."""

from __future__ import annotations

import argparse

from toolkit import hints
from toolkit.commands._driver import add_backend_argument, driver_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="image_action", metavar="ACTION")
    sub.required = True
    build = sub.add_parser("build", help="bake one node of a pool into an image its nodes start from",
                           description="bake one node of a pool into an image its nodes start from")
    build.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    build.add_argument("--pool", required=True, help="the pool whose node is baked")
    build.add_argument("--name", help="the image's name (default: <cluster>-<pool>)")
    add_backend_argument(build)
    listing = sub.add_parser("list", help="the baked images gpuctl keeps records of",
                             description="the baked images gpuctl keeps records of")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    delete = sub.add_parser("delete", help="remove a baked image and its record",
                            description="remove a baked image and its record")
    delete.add_argument("name", metavar="NAME", help="the image's name")


def run(args: argparse.Namespace) -> int:
    if args.image_action == "build":
        return _build(args)
    if args.image_action == "list":
        return _list(args)
    return _delete(args)


def _build(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_spec_arg
    from toolkit.images.build import bake_cluster_name, build
    from toolkit.lock import cluster_lock
    from toolkit.progress import progress

    spec = load_spec_arg(args.spec)
    name = args.name or f"{spec.name}-{args.pool}"
    with cluster_lock(bake_cluster_name(name), "image build"):
        record = build(spec, args.pool, name, driver_for(spec, args), progress)
    print(f"image {record.name}: pool {record.pool} of {record.cluster}, {record.instance_type}, kernel "
          f"{record.stack['kernel']}; use it with `image: baked:{record.name}` in a pool of the same type")
    return 0


def _list(args: argparse.Namespace) -> int:
    from toolkit.commands._reports import ImageEntry, ImagesReport, dump
    from toolkit.errors import ProviderError
    from toolkit.images import store

    entries: list[ImageEntry] = []
    for name in store.names():
        try:
            entries.append(ImageEntry(name=name, problem=None, record=store.load(name)))
        except ProviderError as exc:
            entries.append(ImageEntry(name=name, problem=exc.message, record=None))
    if args.json:
        print(dump(ImagesReport(images=entries)), end="")
        return 0
    if not entries:
        print(f"no baked images (make one with `{store.build_command()}`)")
        return 0
    print(f"{'name':<28}{'provider':<10}{'from':<32}{'instance type':<28}{'created':<22}kernel")
    for entry in entries:
        record = entry.record
        if record is None:
            print(f"{entry.name:<28}{'damaged: ' + (entry.problem or 'no record') if entry.problem else 'no record'}")
            continue
        print(f"{entry.name:<28}{record.provider:<10}{record.cluster + '/' + record.pool:<32}"
              f"{record.instance_type:<28}{record.created_at:<22}{record.stack.get('kernel', '')}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    from toolkit.errors import UsageError
    from toolkit.images.build import delete
    from toolkit.progress import progress

    if not delete(args.name, progress):
        raise UsageError(f"no baked image named {args.name[:40]!r}",
                         hint=f"`{hints.command('image', 'list')}` shows those there are")
    return 0
