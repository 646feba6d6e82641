"""Alibaba Cloud's own catalog checks, run by `toolkit.catalog.checks.check_spec` through the provider.

The checks every cloud shares live in `toolkit/catalog/checks.py`; this module gives them Alibaba's
data (`RULES`: zone ids, images, disks, key types, MTU) and adds what only Alibaba has: eRDMA on
the catalog row, subscription lengths, vSwitch addresses, the shortest TTL its timed release takes.
"""

from __future__ import annotations

import ipaddress
import re

from toolkit import hints
from toolkit.catalog.checks import STANDARD_MTU, CloudRules, check_cloud, no_rdma_nics
from toolkit.catalog.models import InstanceType
from toolkit.catalog.result import CheckResult
from toolkit.providers.alicloud.args import (
    AUTO_RELEASE_MIN_LEAD,
    CREATE_MARGIN,
    ERDMA_MTU_WITHOUT_JUMBO,
    IMAGE_ID_PREFIX,
    IMAGE_PATTERNS,
    PREPAID_MONTHS,
    eris_per_node,
)
from toolkit.providers.alicloud.site import plan_statement
from toolkit.providers.tags import CLUSTER_ID_LENGTH, storage_tags
from toolkit.spec.duration import format_duration
from toolkit.spec.models import ClusterSpec

# Alibaba refuses an auto-release time sooner than 30 minutes ahead, and gpuctl asks for it some
# minutes after the program starts (network first): the same floor GpuClusterArgs applies.
MIN_TTL = AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN
MAX_MTU = 8500  # Alibaba's jumbo frames are 8,500 bytes
# Alibaba reserves the first and the last three IPv4 addresses of every vSwitch CIDR block
# (CreateVSwitchCidrReservation: "the first IP address and the last three IP addresses of the vSwitch
# are reserved by the system", https://www.alibabacloud.com/help/en/vpc/api-610154).
VSWITCH_RESERVED = 4
# System disk categories, RunInstances SystemDisk.Category (and DescribeAvailableResource's
# SystemDisk values): https://www.alibabacloud.com/help/en/ecs/developer-reference/api-runinstances
# (the same list, with cloud_auto and cloud_essd_entry: https://help.aliyun.com/zh/ack/ack-edge/
# developer-reference/api-cs-2015-12-15-struct-data-disk-edge)
DISK_CATEGORIES = ("cloud_essd", "cloud_essd_entry", "cloud_auto", "cloud_ssd", "cloud_efficiency", "cloud")
# The key types Alibaba's ImportKeyPair accepts: rsa, dsa, ecdsa and their OpenSSH certificates; not
# ed25519 (https://help.aliyun.com/en/ecs/developer-reference/api-ecs-2014-05-26-importkeypair,
# read 2026-12-01).
KEY_TYPES = frozenset({
    "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "ssh-rsa-cert-v01@openssh.com", "ssh-dss-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
})


# Alibaba announces the reclaim of a spot instance 5 minutes ahead: "Alibaba Cloud sends you a
# notification through an ECS system event 5 minutes before the instance is released"
# (alibabacloud-ecs20140526 7.11.8, models/_run_instances_request.py:451; the same in
# _describe_spot_price_history_request.py:71; https://www.alibabacloud.com/help/en/ecs/user-guide/
# query-the-interruption-events-of-preemptible-instances, read 2026-12-01). The metadata's
# instance/spot/termination-time, which the lifecycle agent reads, carries the time.
SPOT_NOTICE_MINUTES = 5
# Idle stop on a subscription (PrePaid) node saves nothing and can only harm: StopInstance's
# economical mode (StopCharging) "does not support ... subscription instances", and "the API does not
# return an error. The instance is stopped" (models/_stop_instance_request.py:57), so the node goes
# down and still bills; the agent's other action, DeleteInstance, releases a subscription instance
# only once it has expired (TerminateSubscription, models/_delete_instance_request.py:49).
IDLE_STOP_ON_SUBSCRIPTION = (
    "lifecycle.idle_stop_minutes with a monthly (PrePaid) pool: Alibaba's no-charge stop does not apply to "
    "subscription instances (StopInstance stops them and they keep billing) and DeleteInstance does not release "
    "them before they expire, so idle stop would only take the node down; remove lifecycle.idle_stop_minutes or "
    "bill the pool pay_as_you_go or spot"
)


# OSS bucket tags: pulumi-alicloud 4.0.0 says "The items are no more than 10 for a bucket"
# (pulumi_alicloud/oss/bucket.py:61, the bridged provider's documentation), while Alibaba's PutBucketTags
# reference allows 20 (https://www.alibabacloud.com/help/doc-detail/117800.html, "Last Updated: Jul 08,
# 2025", read 2026-12-01). gpuctl holds to the smaller until a real account shows the larger works
# (docs/alicloud.md, "verified only on paper"); the provider enforces neither (resource_alicloud_oss_
# bucket.go:427 at v1.289.0 is a plain tags map), so a bucket over the limit would fail at PutBucketTagging.
OSS_BUCKET_TAGS = 10
OSS_TAGS_SOURCE = "pulumi-alicloud 4.0.0 oss.Bucket `tags`: no more than 10 for a bucket"
# NAS: an account holds at most 20 permission groups per region (storage.ACCESS_GROUPS_PER_REGION,
# CreateAccessGroup: https://www.alibabacloud.com/help/en/nas/api-createaccessgroup, read 2026-12-01).
# gpuctl asks no NAS API before `up` (it has no NAS SDK; the Pulumi search runs by name), so it warns.
ACCESS_GROUPS_PER_REGION = 20
ACCESS_GROUPS_SOURCE = "https://www.alibabacloud.com/help/en/nas/api-createaccessgroup"


def check_storage(spec: ClusterSpec, result: CheckResult) -> None:
    """Alibaba's limits on the storage stack's volumes: the tags a created bucket takes (gpuctl's own
    plus the spec's), and the permission groups each nas volume uses."""
    for index, volume in enumerate(spec.storage):
        if volume.kind != "object" or volume.existing is not None:
            continue
        # The tags storage.py puts on the bucket: the spec's plus gpuctl's (cluster id included).
        tags = storage_tags(spec, keep_on_down=volume.keep_on_down, cluster_id="0" * CLUSTER_ID_LENGTH)
        if len(tags) > OSS_BUCKET_TAGS:
            ours = len(tags) - len(spec.tags)
            result.problems.append(
                f"tags: {len(spec.tags)} tag(s) and the {ours} gpuctl adds make {len(tags)} on the OSS bucket of "
                f"storage[{index}] ({volume.name}); a bucket takes at most {OSS_BUCKET_TAGS} ({OSS_TAGS_SOURCE}): "
                f"keep at most {OSS_BUCKET_TAGS - ours} tags in the spec's `tags`"
            )
    nas = [v.name for v in spec.storage if v.kind == "nas"]
    if nas:
        result.warnings.append(
            f"storage: {len(nas)} nas volume(s) ({', '.join(nas)}) take {len(nas)} NAS permission group(s) in "
            f"{spec.region}; an account holds at most {ACCESS_GROUPS_PER_REGION} per region ({ACCESS_GROUPS_SOURCE}) "
            "and gpuctl does not count the ones it already has: `aliyun nas DescribeAccessGroups --RegionId "
            f"{spec.region} --FileSystemType standard` lists them"
        )


# Instance type names: ecs.<family>.<size> (the family may carry a GPU-count part, ecs.gn7i-8x.32xlarge),
# "Instance family naming and classification",
# https://www.alibabacloud.com/help/en/elastic-compute-service/latest/instance-type-families (read
# 2026-12-01; the catalog rows are its examples). A name outside this form cannot exist.
TYPE_NAME = re.compile(r"ecs\.[a-z][a-z0-9]*(-[a-z0-9]+)*\.(small|medium|large|[1-9][0-9]*xlarge|xlarge)")
TYPE_NAME_FORM = "ecs.<family>.<size>, e.g. ecs.ebmgn7ex.32xlarge or ecs.gn7i-c8g1.2xlarge"
# cloud_essd_entry "can be set ... only when InstanceType is set to ... (ecs.u1) or ... (ecs.e)"
# (RunInstances SystemDisk.Category, alibabacloud-ecs20140526 7.11.8 models/_run_instances_request.py:1979).
ESSD_ENTRY = "cloud_essd_entry"
ESSD_ENTRY_FAMILIES = frozenset({"u1", "e"})


def _check_system_disk(category: str, row: InstanceType, where: str, result: CheckResult) -> None:
    """The system disk categories the family takes (the catalog row, from its family page), and
    RunInstances' own rule for cloud_essd_entry."""
    if category not in DISK_CATEGORIES:
        return  # the shared check refuses it with the cloud's whole list
    if category == ESSD_ENTRY and row.family not in ESSD_ENTRY_FAMILIES:
        result.problems.append(
            f"{where}.system_disk.category: {ESSD_ENTRY} is for the ecs.u1 and ecs.e families only (RunInstances), "
            f"not {row.family}; use cloud_essd"
        )
    elif row.system_disk_categories is not None and category not in row.system_disk_categories:
        result.problems.append(
            f"{where}.system_disk.category: {row.family} takes {', '.join(row.system_disk_categories)} as system disks "
            f"(its family page, {row.source.url}), not {category}; use {row.system_disk_categories[0]}"
        )


def jumbo_unknown(spec: ClusterSpec, row: InstanceType) -> str:
    """The one message of a jumbo MTU on a family whose jumbo frames no page read states: gpuctl enables
    none (PoolArgs.jumbo_frames) and configures what the VPC then carries (args.effective_mtu)."""
    carried = ERDMA_MTU_WITHOUT_JUMBO if spec.network.fabric == "erdma" else STANDARD_MTU
    return (f"network.mtu: {spec.network.mtu}: no Alibaba page gpuctl read says whether {row.family} carries jumbo "
            f"frames, so gpuctl enables none and configures and exports MTU {carried} on {row.name}; "
            f"DescribeInstanceTypes' JumboFrameSupport answers it for your account; set network.mtu: {carried} to "
            "say so in the spec")


def zone_suffix(region: str) -> str:
    """A zone id is its region id and a letter: after a '-' where the region id ends in a letter
    (cn-beijing-h), directly where it ends in a digit (ap-southeast-1a)."""
    return "[a-z]" if region[-1].isdigit() else "-[a-z]"


def check_row(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    """The fabric on one pool's catalog row: eRDMA needs ERI support; rdma needs RoCE/IB NICs."""
    fabric = spec.network.fabric
    if fabric == "erdma" and (row.rdma is None or row.rdma.kind != "erdma" or row.rdma.eri_quantity == 0):
        result.problems.append(
            f"{where}.instance_type: {row.name} has no eRDMA interface (ERI) support; "
            f"pick a type with eRDMA (`{hints.command('catalog', 'alicloud', '--fabric', 'erdma')}`) "
            "or set network.fabric: tcp"
        )
    elif fabric == "rdma":
        problem = no_rdma_nics(row, where, "use fabric erdma with an eRDMA type")
        if problem is not None:
            result.problems.append(problem)


def check_pools(spec: ClusterSpec, result: CheckResult) -> None:
    """Alibaba-only limits: subscription lengths, vSwitch addresses, the MTU the VPC carries."""
    addresses = 0
    for index, pool in enumerate(spec.node_pools):
        where = f"node_pools[{index}] ({pool.name})"
        row = result.rows.get(pool.name)
        months = pool.billing.months
        if pool.billing.mode == "monthly" and spec.lifecycle.idle_stop_minutes is not None:
            result.problems.append(f"{where}.billing: {IDLE_STOP_ON_SUBSCRIPTION}")
        ceiling = pool.billing.spot_max_price_per_hour
        if ceiling is not None:
            # The API reads the ceiling in the account's currency (site.py): say what goes out, or why not.
            result.warnings.append(f"{where}.billing.spot_max_price_per_hour: {plan_statement(ceiling)}")
        if pool.billing.mode == "spot":
            hook = ("lifecycle.on_interruption runs in that window" if spec.lifecycle.on_interruption
                    else "set lifecycle.on_interruption to checkpoint in that window")
            result.warnings.append(
                f"{where}.billing: Alibaba reclaims a spot instance with {SPOT_NOTICE_MINUTES} minutes' notice "
                f"(an ECS system event and the metadata's instance/spot/termination-time); {hook}"
            )
        if pool.billing.mode == "monthly" and months is not None and months not in PREPAID_MONTHS:
            result.problems.append(
                f"{where}.billing.months: {months} is not a subscription length Alibaba sells; RunInstances "
                f"takes {', '.join(map(str, PREPAID_MONTHS))} months"
            )
        erdma = spec.network.fabric == "erdma" and row is not None and row.rdma is not None and row.rdma.kind == "erdma"
        # Each node: its primary interface, plus one ENI per secondary ERI.
        addresses += pool.count * (eris_per_node(row) if erdma and row is not None else 1)
        if row is not None:
            _check_system_disk(pool.system_disk.category, row, where, result)
    subnet = ipaddress.ip_network(spec.network.effective_subnet_cidr)
    usable = subnet.num_addresses - VSWITCH_RESERVED
    if addresses > usable:
        result.problems.append(
            f"network.subnet_cidr: {subnet} has {usable} usable addresses (Alibaba reserves the first and the "
            f"last three of a vSwitch) but the cluster needs {addresses} (each node's primary interface and "
            "one per secondary ERI); set network.subnet_cidr to a larger block inside network.vpc_cidr"
        )


RULES = CloudRules(
    label="Alibaba Cloud",
    zone_suffix=zone_suffix,
    zone_example="cn-beijing-h or ap-southeast-1a",
    # The aliases of toolkit.providers.alicloud.args and ids `m-<lower-case letters and digits>`.
    image_aliases=tuple(sorted(IMAGE_PATTERNS)),
    image_id=re.compile(re.escape(IMAGE_ID_PREFIX) + r"[0-9a-z]{6,40}"),
    image_id_form=f"{IMAGE_ID_PREFIX}xxxxxxxx",
    disk_categories=DISK_CATEGORIES,
    max_mtu=MAX_MTU,
    key_types=KEY_TYPES,
    key_types_refusal="which Alibaba's ImportKeyPair does not accept (it takes RSA, DSA and ECDSA keys)",
    key_command="ssh-keygen -t ecdsa",
    check_row=check_row,
    check_pools=check_pools,
    type_name=TYPE_NAME,
    type_name_form=TYPE_NAME_FORM,
    jumbo_unknown=jumbo_unknown,
)


def check_catalog(spec: ClusterSpec, result: CheckResult) -> None:
    check_cloud(spec, result, RULES)
    check_storage(spec, result)
    if spec.lifecycle.ttl_delta < MIN_TTL:
        floor = format_duration(MIN_TTL)
        result.problems.append(
            f"lifecycle.ttl: {spec.lifecycle.ttl} is under {floor} for alicloud: Alibaba refuses an auto-release "
            f"time sooner than {format_duration(AUTO_RELEASE_MIN_LEAD)} ahead and gpuctl keeps a "
            f"{format_duration(CREATE_MARGIN)} margin for creating the network first; set lifecycle.ttl: "
            f"{floor} or more"
        )
