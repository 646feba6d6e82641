"""`--write-spec PATH`: the winning offer as a cluster spec to start from, never over an existing file.

The spec is built as data and dumped with yaml.safe_dump (nothing from the command line is pasted
into YAML text), checked against the spec schema before it is written, and written with O_EXCL so
an existing file is never replaced. Two values are placeholders the user must replace, and the
header says so: `ssh.public_key` (a path under ~/.ssh, whatever key the user holds; validate
refuses a file that is not there) and `network.admin_cidr` (a documentation range nobody can SSH
from; validate warns about it).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from toolkit.choose.needs import Needs, text_value
from toolkit.choose.offers import refresh_command
from toolkit.choose.report import Offer
from toolkit.comment import comment_text
from toolkit.errors import UsageError
from toolkit.prices.cache import PriceCache
from toolkit.spec.models import ClusterSpec

# Per cloud: the key path (Alibaba imports RSA/DSA/ECDSA only, not ed25519; Tencent OpenSSH RSA only,
# toolkit/providers/tencentcloud/provider.py KEY_TYPES), the system disk category (the examples' own)
# and the fabric word for the type's RDMA kind.
KEY_PATH = {"alicloud": "~/.ssh/id_ecdsa.pub", "tencentcloud": "~/.ssh/id_rsa.pub"}
KEY_NOTE = {"alicloud": "; Alibaba takes RSA or ECDSA keys, not ed25519).",
            "tencentcloud": "; Tencent takes RSA keys only)."}
DISK = {"alicloud": "cloud_essd", "tencentcloud": "CLOUD_BSSD"}
FABRIC = {"erdma": "erdma", "roce": "rdma", "ib": "rdma"}
PLACEHOLDER_CIDR = "203.0.113.0/24"  # RFC 5737 documentation range: a placeholder, validate warns
DEFAULT_TTL_HOURS = 8


def zone_for(offer: Offer, needs: Needs, cache: PriceCache) -> tuple[str, str]:
    """(zone, where it came from): the price's zone, a zone the cache shows selling the type in the
    region, or --zone; else a UsageError saying how to get one."""
    if offer.region is None:
        raise UsageError(f"--write-spec: {offer.instance_type} has no region (no price read for any region); "
                         f"give --region R (and --zone Z), or run `{refresh_command(offer.provider, None)}`")
    if offer.zone:
        return offer.zone, "the zone of the price"
    sold = sorted({e.zone for e in cache.entries if (e.provider, e.region, e.instance_type)
                   == (offer.provider, offer.region, offer.instance_type) and e.zone})
    if sold:
        return sold[0], "a zone the price cache shows selling the type"
    given = [z for z in needs.zones if z.startswith(offer.region + "-")]
    if given:
        return given[0], "--zone"
    raise UsageError(f"--write-spec: no zone of {offer.region} is known to sell {offer.instance_type}; "
                     f"give --zone {offer.region}-<zone>, or run `{refresh_command(offer.provider, offer.region)}` "
                     "(its per-zone prices name the zones)")


def spec_data(offer: Offer, needs: Needs, zone: str, rdma_kind: str | None, max_mtu: int | None) -> dict[str, Any]:
    base = re.sub(r"[^a-z0-9]+", "-", offer.instance_type.lower().removeprefix("ecs.")).strip("-")
    name = f"{base[:20].strip('-')}-{offer.nodes}x{offer.gpus_per_node}"
    hours = math.ceil(needs.hours) if needs.hours else DEFAULT_TTL_HOURS
    fabric = FABRIC.get(rdma_kind or "", "tcp")
    mtu = min(8500, max_mtu) if max_mtu else 8500
    if fabric == "erdma" and mtu < 8500:
        mtu = 1400  # eRDMA without jumbo frames runs at 1400, never at the VPC's 1500 (catalog/checks.py ERDMA_MTUS)
    pool: dict[str, Any] = {"name": "gpu", "instance_type": offer.instance_type, "count": offer.nodes,
                            "image": "ubuntu_22_04",
                            "system_disk": {"size_gb": 200, "category": DISK[offer.provider]},
                            "billing": {"mode": offer.billing}}
    return {
        "name": name, "provider": offer.provider, "region": offer.region, "zone": zone,
        "node_pools": [pool],
        "network": {"fabric": fabric, "mtu": mtu, "vpc_cidr": "10.42.0.0/16", "admin_cidr": PLACEHOLDER_CIDR},
        "ssh": {"public_key": KEY_PATH[offer.provider]},
        "lifecycle": {"ttl": f"{hours}h", "idle_stop_minutes": 60},
        "tags": {"chosen-by": "gpuctl-choose"},
    }


def render(offer: Offer, data: dict[str, Any], zone_from: str) -> str:
    """The header comment, then the spec through YAML's own emitter. The header quotes the price
    cache (the price's source and currency), so each of its lines goes through comment_text: a
    line break in a cached value can never end the comment and add a key to the spec."""
    price = (f"{offer.per_hour:,.2f} {offer.currency}/h ({offer.price_note})" if offer.per_hour is not None
             else offer.price_note)
    header = [
        f"Written by gpuctl choose: rank {offer.rank}, {offer.provider} {offer.instance_type}, "
        f"{offer.nodes} x {offer.gpus_per_node} GPUs.",
        f"Price: {price}",
        f"Zone: {data['zone']} ({zone_from}).",
        f"REPLACE ssh.public_key ({data['ssh']['public_key']}) with the path of your own .pub file",
        "  (validate refuses a key file that is not there" + KEY_NOTE.get(offer.provider, ")."),
        f"REPLACE network.admin_cidr ({PLACEHOLDER_CIDR}, a documentation range) with your office or VPN range.",
        "Then: gpuctl validate <this file> && gpuctl plan <this file>",
    ]
    comments = "".join(f"# {comment_text(line)}\n" for line in header)
    return comments + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def write_spec(path_text: str, offer: Offer, needs: Needs, cache: PriceCache, rdma_kind: str | None,
               max_mtu: int | None) -> Path:
    """Write the spec at `path_text`; refuse an existing file, a bad path or an offer gpuctl cannot create."""
    text_value("--write-spec", path_text, max_length=1024)
    if offer.compare_only:
        raise UsageError(f"--write-spec: {offer.provider} {offer.instance_type} is compare only; "
                         "gpuctl cannot create it")
    zone, zone_from = zone_for(offer, needs, cache)
    data = spec_data(offer, needs, zone, rdma_kind, max_mtu)
    try:
        # What gpuctl writes must fit its own schema. The region and zone come from the price cache,
        # which is data: a damaged entry is refused here, as the schema says, and never written.
        ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"--write-spec: the spec for {offer.instance_type} does not fit the schema: "
                         f"{exc.errors()[0]['msg'].removeprefix('Value error, ')}; its region and zone come from the "
                         f"price cache, so refresh it: `{refresh_command(offer.provider, None)}`") from None
    path = Path(path_text)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise UsageError(f"--write-spec {path}: the file exists; gpuctl never writes over a file: "
                         "give a new path or remove it") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--write-spec {path}: cannot be written ({reason})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(render(offer, data, zone_from))
    except OSError as exc:  # a full disk or a quota: no half-written spec is left to be mistaken for one
        with contextlib.suppress(OSError):
            path.unlink()
        raise UsageError(f"--write-spec {path}: cannot be written ({exc.strerror or exc})") from None
    return path
