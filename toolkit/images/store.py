"""The records of baked images: `$GPUCTL_HOME/images/<name>/image.json`, written after the image
exists and removed before it is deleted, so a record always names an image that was made.

A pool names one with `image: baked:<name>`. The record says what the image holds (the stack
record the site playbook wrote on the baked node: its install inputs, kernel, package set and
loaded NVIDIA module) and what it was baked from (provider, pool, instance type, software pins), so
configure can tell a node booted from it that holds the stack from one that does not.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Literal, NoReturn

from pydantic import BaseModel, ConfigDict, ValidationError

from toolkit import hints
from toolkit.errors import CatalogError, ProviderError, UsageError
from toolkit.files import FileError, read_bounded, write_atomic
from toolkit.state import gpuctl_home, own_dir

BAKED_PREFIX = "baked:"
# A cluster name 5 characters shorter (the bake runs in a cluster named bake-<name>): a directory
# name, a cloud image name, never an option.
IMAGE_NAME = re.compile(r"[a-z](?:[a-z0-9-]{0,25}[a-z0-9])?")
MAX_RECORD_BYTES = 64 * 1024  # a record is a few hundred bytes


class ImageRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    name: str
    provider: str
    # What it was baked from: the spec's cluster, the pool, its instance type and software pins.
    cluster: str
    pool: str
    instance_type: str
    software: dict[str, str | bool | None]
    created_at: str
    # The install record the site playbook wrote on the baked node (roles/install_record): inputs, kernel,
    # packages, nvidia. A node booted from the image carries the same file.
    stack: dict[str, str]
    # Provider-specific: the lab's layout ("overlay": the image is the node's upper layer, stacked
    # on the base root named by `base_key`; "copy": a whole root) and where it lies.
    layout: Literal["overlay", "copy"] | None = None
    base_key: str | None = None
    location: str


def delete_command(name: str) -> str:
    return hints.command("image", "delete", name)


def build_command(name: str | None = None, pool: str = "POOL") -> str:
    return hints.command("image", "build", "SPEC", "--pool", pool, *(("--name", name) if name else ()))


def cloud_instead(console: str, id_form: str) -> str:
    """What a cloud user does where gpuctl bakes lab images only: `image build` and `baked:` say it."""
    return (f"make a custom image of a configured node in the {console} and give its id ({id_form}) as "
            "the pool's image; its install record (/etc/gpuctl/install.env) lets configure skip the "
            "install roles on the nodes that start from it (make it from a cluster without a lifecycle "
            "agent: the image would carry the agent and its old settings)")


def refuse_on_cloud(image: str, cloud: str, id_form: str) -> NoReturn:
    """A cloud pool's `image: baked:<name>`: `gpuctl image build` bakes lab images only so far, so
    a cloud pool takes a custom image's id; refused with what to do instead (CatalogError)."""
    raise CatalogError([f"image '{image}': baked images are made in the local lab only so far"],
                       hint=cloud_instead(f"{cloud} console", id_form))


def baked_name(image: str) -> str | None:
    """The image name of `image: baked:<name>`, else None (an alias or a cloud image id)."""
    return image[len(BAKED_PREFIX):] if image.startswith(BAKED_PREFIX) else None


def check_name(name: str, *, where: str = "--name") -> str:
    if not IMAGE_NAME.fullmatch(name):
        raise UsageError(f"{where}: {name[:60]!r} is not an image name",
                         hint="use 1 to 27 lower-case letters, digits and dashes: a letter first, no dash last")
    return name


def images_dir() -> Path:
    return gpuctl_home() / "images"


def image_dir(name: str) -> Path:
    return images_dir() / check_name(name)


def record_path(name: str) -> Path:
    return image_dir(name) / "image.json"


def load(name: str) -> ImageRecord | None:
    """The record of image `name`, None when there is none; a damaged one is refused, named."""
    path = record_path(name)
    if not path.exists() and not path.is_symlink():
        return None
    try:
        record = ImageRecord.model_validate_json(read_bounded(path, limit=MAX_RECORD_BYTES, what="image record",
                                                              follow=False))
    except FileError as exc:
        raise ProviderError(f"{path}: {exc.reason}", hint=f"remove it with `{delete_command(name)}`") from None
    except ValidationError as exc:
        raise ProviderError(f"{path} is not an image record gpuctl wrote ({exc.error_count()} problems)",
                            hint=f"remove it with `{delete_command(name)}`") from None
    if record.name != name:
        raise ProviderError(f"{path} names image {record.name[:60]!r}, not {name!r}",
                            hint=f"remove it with `{delete_command(name)}`")
    return record


def require(name: str, *, where: str) -> ImageRecord:
    """The record a spec names (`where`: the spec field), or a clear error saying how to make it."""
    record = load(name)
    if record is None:
        raise UsageError(f"{where}: no baked image named {name!r} (gpuctl image list shows those there are)",
                         hint=f"bake it with `{build_command(name)}`")
    return record


def save(record: ImageRecord) -> Path:
    own_dir(image_dir(record.name))
    path = record_path(record.name)
    write_atomic(path, json.dumps(record.model_dump(), indent=2, sort_keys=True) + "\n")
    return path


def names() -> list[str]:
    """Every image with a record folder here, by name (damaged records included: `list` says so)."""
    folder = images_dir()
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and IMAGE_NAME.fullmatch(p.name))


def forget(name: str) -> None:
    """Remove the record and the folder of image `name` (the provider removed the image first)."""
    folder = image_dir(name)
    if folder.is_symlink():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
