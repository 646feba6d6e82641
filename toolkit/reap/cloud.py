"""What the clouds hold that carries gpuctl's tags: every region the account sees, one search per region.

Per cloud, through its official SDK (the same plumbing as the price and leftover calls: signed
requests, bounded retries of read-only calls, errors scrubbed of credentials):

- Tencent Cloud: `DescribeRegions` (CVM), then `DescribeInstances` with the filter
  `tag-key=gpuctl:cluster`, paged 100 at a time. Release: `TerminateInstances`, one batch per charge
  type ("批量操作时，所有实例的付费类型必须一致"), and for PREPAID a second one once the first has moved
  the instances to the recycle bin ("包年包月实例首次调用本接口，实例将被移至回收站，再次调用本接口，实例将被
  销毁"; both from TerminateInstances in tencentcloud-sdk-python-cvm 3.1.178 cvm_client.py:2658-2666),
  as tencentcloud_instance's delete does with force_delete (resource_tc_instance.go:2433-2460, 2577-2595
  at v1.82.42: terminate, wait for SHUTDOWN with no operation running, terminate again,
  InvalidInstanceState.Terminating meaning it is already going).
- Alibaba Cloud: `DescribeRegions`, then `DescribeInstances` with `Tag.1.Key=gpuctl:cluster`, paged
  by MaxResults/NextToken (the API caps a single-tag filter at 1,000 instances; a team with more
  gpuctl instances than that in one region would need ListTagResources). Release: `DeleteInstances`
  with `Force` (a running instance is stopped first, as `aliyun ecs DeleteInstance --Force true`).

Only instances are searched: they are what costs money and what carries the TTL tag. The rest of an
orphaned cluster (VPC, security group ...) is what `gpuctl down` of its spec finds by tag.

A cloud without credentials, or a region whose search fails, becomes a `RegionGap`: reported with
the reason (and, for credentials, the variables to export), never silently skipped. Every call of
one reap spends one `cloud_api.Budget`, and every list goes through the shared pager's caps: an API
that never stops paging or never answers costs a bounded time, and the regions it kept from being
searched are named as gaps (each with the reason: the budget ran out, the list did not end).
An answer's fields are read defensively (a string where the API documents a list is no list).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import Any, Protocol

from toolkit.errors import GpuctlError, MissingToolError
from toolkit.providers.cloud_api import Budget, Page, RegionGap, listed, mapping, refused_credentials
from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, TAG_EXPIRES, TAG_MANAGED_BY, TAG_OWNER

CLOUDS = ("alicloud", "tencentcloud")
# Where DescribeRegions is asked: any region answers with the whole list.
HOME_REGIONS = {"alicloud": "cn-hangzhou", "tencentcloud": "ap-guangzhou"}
# The variables that hold each cloud's key (what a credential error names).
CREDENTIAL_VARIABLES = {
    "alicloud": ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_ID",
                 "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    "tencentcloud": ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"),
}
RELEASE_BATCH = 100  # TerminateInstances takes up to 100 ids; DeleteInstances up to 100 too
# Tencent PREPAID: how often and how long to look for the recycle bin (SHUTDOWN) between the two terminates.
RECYCLE_POLL_S = 10.0
RECYCLE_POLLS = 30
PREPAID = "PREPAID"
ALREADY_TERMINATING = "InvalidInstanceState.Terminating"
# "InvalidInstanceId.NotFound" (tencentcloud-sdk-python-cvm 3.1.178 errorcodes.py:195).
NOT_FOUND = "InvalidInstanceId.NotFound"


@dataclass(frozen=True)
class CloudInstance:
    """One instance tagged `gpuctl:cluster`, with the tags reap reads."""

    provider: str
    region: str
    id: str
    name: str
    instance_type: str
    created_at: datetime | None
    tags: Mapping[str, str] = field(default_factory=dict)
    charge_type: str = ""  # Tencent InstanceChargeType (PREPAID, POSTPAID_BY_HOUR, SPOTPAID ...); "" unknown

    @property
    def cluster(self) -> str:
        return self.tags.get(TAG_CLUSTER, "")

    @property
    def cluster_id(self) -> str | None:
        return self.tags.get(TAG_CLUSTER_ID) or None

    @property
    def owner(self) -> str | None:
        return self.tags.get(TAG_OWNER) or None

    @property
    def expires_at(self) -> datetime | None:
        """Its own `gpuctl:expires` tag; None when absent or unreadable."""
        from toolkit.timestamps import parse_iso

        return parse_iso(self.tags.get(TAG_EXPIRES))

    def expired(self, now: datetime) -> bool | None:
        """Past its own expiry tag; None when that tag is absent or unreadable (never "expired")."""
        expires = self.expires_at
        return None if expires is None else now >= expires

    @property
    def ours(self) -> bool:
        """Carries the tags gpuctl writes and that prove which cluster it is: what may be released."""
        return bool(self.cluster and self.cluster_id and self.tags.get(TAG_MANAGED_BY) == "gpuctl")


@dataclass
class Released:
    """What a release did: the ids released, and each batch that failed with its error (one failing
    batch never keeps the others from being released)."""

    ids: list[str] = field(default_factory=list)
    failed: list[tuple[list[str], GpuctlError]] = field(default_factory=list)


class CloudSearch(Protocol):
    provider: str

    def regions(self) -> list[str]: ...

    def instances(self, region: str, budget: Budget | None = None) -> list[CloudInstance]: ...

    def release(self, region: str, instances: list[CloudInstance]) -> Released: ...

    def inspect_command(self, region: str, cluster: str) -> str: ...

    def remove_commands(self, region: str, instances: list[CloudInstance]) -> list[str]: ...


def batches(instances: list[CloudInstance], *, by_charge: bool) -> list[list[CloudInstance]]:
    """Batches of at most RELEASE_BATCH; with `by_charge`, each of one charge type only."""
    groups: dict[str, list[CloudInstance]] = {}
    for instance in instances:
        groups.setdefault(instance.charge_type if by_charge else "", []).append(instance)
    return [group[start:start + RELEASE_BATCH] for _, group in sorted(groups.items())
            for start in range(0, len(group), RELEASE_BATCH)]


class _RegionalSearch:
    """What both clouds' searches share: the cloud's credentials are loaded when the search is made
    (MissingToolError now, before any region is asked), then one API per region, connected on first use."""

    def __init__(self, env: Mapping[str, str] | None = None, budget: Budget | None = None) -> None:
        self._env = env
        self._budget = budget or Budget()
        self._sdk().load_credentials(env)
        self._apis: dict[str, Any] = {}

    @staticmethod
    def _sdk() -> ModuleType:
        """The cloud's sdk module (imported when asked): its load_credentials and connect."""
        raise NotImplementedError

    def _api(self, region: str, budget: Budget | None = None) -> Any:
        """The region's API, spending `budget` (a region's share while searching) or the command's."""
        if region not in self._apis:
            self._apis[region] = self._sdk().connect(region, env=self._env, budget=self._budget)
        self._apis[region].budget = budget or self._budget
        return self._apis[region]


# --------------------------------------------------------------------------------- Tencent Cloud


class TencentSearch(_RegionalSearch):
    provider = "tencentcloud"

    @staticmethod
    def _sdk() -> ModuleType:
        from toolkit.providers.tencentcloud import sdk

        return sdk

    def regions(self) -> list[str]:
        api = self._api(HOME_REGIONS[self.provider])
        answer = api.call("cvm", "DescribeRegions", {})
        rows = [r for r in api.items(answer.get("RegionSet"), "RegionSet", action="DescribeRegions")
                if isinstance(r, Mapping)
                and isinstance(r.get("Region"), str) and r["Region"]]
        return sorted({r["Region"] for r in rows if r.get("RegionState", "AVAILABLE") == "AVAILABLE"})

    def instances(self, region: str, budget: Budget | None = None) -> list[CloudInstance]:
        from toolkit.providers.tencentcloud.sdk import tags_of
        from toolkit.timestamps import parse_iso

        items = self._api(region, budget).pages("cvm", "DescribeInstances",
                                        {"Filters": [{"Name": "tag-key", "Values": [TAG_CLUSTER]}]}, "InstanceSet")
        return [CloudInstance(self.provider, region, item["InstanceId"], str(item.get("InstanceName") or ""),
                              str(item.get("InstanceType") or ""), parse_iso(item.get("CreatedTime")), tags_of(item),
                              charge_type=str(item.get("InstanceChargeType") or ""))
                for item in items if isinstance(item.get("InstanceId"), str) and item["InstanceId"]]

    def release(self, region: str, instances: list[CloudInstance]) -> Released:
        """One TerminateInstances per batch of one charge type; PREPAID batches a second time once in the
        recycle bin. A failed batch is recorded and the others go on."""
        done = Released()
        for batch in batches(instances, by_charge=True):
            ids = [i.id for i in batch]
            try:
                self._terminate(region, ids)
                if batch[0].charge_type == PREPAID:
                    self._wait_for_recycle_bin(region, ids)
                    self._terminate(region, ids, gone_ok=True)
            except GpuctlError as error:
                done.failed.append((ids, error))
            else:
                done.ids += ids
        return done

    def _terminate(self, region: str, ids: list[str], *, gone_ok: bool = False) -> None:
        """`gone_ok`: the second terminate of PREPAID ones, where an instance already destroyed (the wait
        counts a gone one as done) is what the call was for, not a failure."""
        from toolkit.providers.tencentcloud.sdk import ApiError

        try:
            self._api(region).call("cvm", "TerminateInstances", {"InstanceIds": ids})
        except ApiError as error:
            if error.code != ALREADY_TERMINATING and not (gone_ok and error.code == NOT_FOUND):
                raise

    def _wait_for_recycle_bin(self, region: str, ids: list[str]) -> None:
        """Until every instance is SHUTDOWN with no operation running (or gone), as the provider waits."""
        import time

        for attempt in range(RECYCLE_POLLS):
            answer = self._api(region).call("cvm", "DescribeInstances", {"InstanceIds": ids, "Limit": len(ids)})
            items = [i for i in self._api(region).items(answer.get("InstanceSet"), "InstanceSet",
                                                        action="DescribeInstances") if isinstance(i, Mapping)]
            waiting = [str(i.get("InstanceId")) for i in items
                       if not (i.get("InstanceState") == "SHUTDOWN" and i.get("LatestOperationState") != "OPERATING")]
            if not waiting:
                return
            if attempt + 1 < RECYCLE_POLLS:
                # The wait is the command's too (cloud_api.Budget: every call and wait): past it, stop.
                if self._budget.remaining() <= RECYCLE_POLL_S:
                    raise GpuctlError(f"{', '.join(waiting)} had not reached the recycle bin (SHUTDOWN) when the "
                                      f"command's {self._budget.seconds:.0f} s for cloud calls ran out; a PREPAID "
                                      "instance is destroyed only by a second TerminateInstances: run reap again")
                time.sleep(RECYCLE_POLL_S)
        raise GpuctlError(f"{', '.join(waiting)} did not reach the recycle bin (SHUTDOWN) within "
                          f"{RECYCLE_POLLS * RECYCLE_POLL_S:.0f} s of the first TerminateInstances; a PREPAID instance "
                          "is destroyed only by a second one: run reap again")

    def inspect_command(self, region: str, cluster: str) -> str:
        from toolkit.providers.tencentcloud.driver import TencentcloudDriver

        return TencentcloudDriver().list_by_tag_command(region, cluster)

    def remove_commands(self, region: str, instances: list[CloudInstance]) -> list[str]:
        """One command per batch of one charge type; PREPAID ones run twice (the recycle bin, then gone)."""
        import json
        import shlex

        out = []
        for batch in batches(instances, by_charge=True):
            quoted = shlex.quote(json.dumps([i.id for i in batch]))
            command = f"tccli cvm TerminateInstances --region {shlex.quote(region)} --InstanceIds {quoted}"
            twice = "  # PREPAID: run it again once they show SHUTDOWN (the recycle bin)"
            out.append(command + (twice if batch[0].charge_type == PREPAID else ""))
        return out


# --------------------------------------------------------------------------------- Alibaba Cloud


class AlibabaSearch(_RegionalSearch):
    provider = "alicloud"

    @staticmethod
    def _sdk() -> ModuleType:
        from toolkit.providers.alicloud import sdk

        return sdk

    def regions(self) -> list[str]:
        from alibabacloud_ecs20140526 import models

        api = self._api(HOME_REGIONS[self.provider])
        body = api.call("DescribeRegions", models.DescribeRegionsRequest())
        rows = api.items(mapping(body.get("Regions")).get("Region"), "Regions.Region", action="DescribeRegions")
        return sorted({r["RegionId"] for r in rows if isinstance(r, Mapping) and isinstance(r.get("RegionId"), str)
                       and r["RegionId"]})

    def instances(self, region: str, budget: Budget | None = None) -> list[CloudInstance]:
        from alibabacloud_ecs20140526 import models

        from toolkit.timestamps import parse_iso

        api = self._api(region, budget)

        def fetch(token: Any) -> Page:
            request = models.DescribeInstancesRequest(
                region_id=region, max_results=100, next_token=token,
                tag=[models.DescribeInstancesRequestTag(key=TAG_CLUSTER)])
            body = api.call("DescribeInstances", request, context={"region": region})
            listed_here = api.items(mapping(body.get("Instances")).get("Instance"), "Instances.Instance",
                                    action="DescribeInstances")
            items = [item for item in listed_here if isinstance(item, dict)]
            token = body.get("NextToken")
            return Page(items, token if isinstance(token, str) and token else None)

        found: list[CloudInstance] = []
        for item in api.collect(fetch, action="DescribeInstances", context={"region": region}):
            tags = {t["TagKey"]: str(t.get("TagValue") or "") for t in listed(mapping(item.get("Tags")).get("Tag"))
                    if isinstance(t, Mapping) and isinstance(t.get("TagKey"), str) and t["TagKey"]}
            if isinstance(item.get("InstanceId"), str) and item["InstanceId"]:
                found.append(CloudInstance(self.provider, region, item["InstanceId"],
                                           str(item.get("InstanceName") or ""), str(item.get("InstanceType") or ""),
                                           parse_iso(item.get("CreationTime")), tags))
        return found

    def release(self, region: str, instances: list[CloudInstance]) -> Released:
        from alibabacloud_ecs20140526 import models

        done = Released()
        for batch in batches(instances, by_charge=False):
            ids = [i.id for i in batch]
            request = models.DeleteInstancesRequest(region_id=region, instance_id=ids, force=True)
            try:
                self._api(region).call("DeleteInstances", request, context={"region": region})
            except GpuctlError as error:
                done.failed.append((ids, error))
            else:
                done.ids += ids
        return done

    def inspect_command(self, region: str, cluster: str) -> str:
        from toolkit.providers.alicloud.driver import AlicloudDriver

        return AlicloudDriver().list_by_tag_command(region, cluster)

    def remove_commands(self, region: str, instances: list[CloudInstance]) -> list[str]:
        import shlex

        numbered = " ".join(f"--InstanceId.{n} {shlex.quote(i.id)}" for n, i in enumerate(instances, 1))
        return [f"aliyun ecs DeleteInstances --RegionId {shlex.quote(region)} {numbered} --Force true"]


SEARCHES: dict[str, type[TencentSearch] | type[AlibabaSearch]] = {
    "tencentcloud": TencentSearch, "alicloud": AlibabaSearch,
}


def open_search(provider: str, env: Mapping[str, str] | None = None,
                budget: Budget | None = None) -> CloudSearch | RegionGap:
    """The cloud's search, or a gap naming the variables to export when it has no credentials."""
    try:
        return SEARCHES[provider](env, budget)
    except MissingToolError as error:
        names = " / ".join(CREDENTIAL_VARIABLES[provider])
        return RegionGap(provider, "*", f"{error.message} (export {names})", credentials=True)


def gap_of(provider: str, region: str, error: GpuctlError) -> RegionGap:
    """A failed call -> a gap; an error that says the key is wrong counts as a credentials gap."""
    auth = refused_credentials(error)
    reason = error.message if not auth else f"{error.message} (check {' / '.join(CREDENTIAL_VARIABLES[provider])})"
    return RegionGap(provider, region, reason, credentials=auth)


@dataclass
class SearchResult:
    instances: list[CloudInstance] = field(default_factory=list)
    gaps: list[RegionGap] = field(default_factory=list)
    searched: list[tuple[str, str]] = field(default_factory=list)  # (provider, region) asked
    searches: dict[str, CloudSearch] = field(default_factory=dict)


def search(providers: Iterable[str], *, regions: Iterable[str] = (), known: Mapping[str, set[str]] | None = None,
           env: Mapping[str, str] | None = None, budget: Budget | None = None) -> SearchResult:
    """Ask every region of each cloud (only `regions` where given); `known` adds the regions local
    state names, so a cluster's own region is asked even when DescribeRegions fails. One `budget`
    for every call (a new one of cloud_api.LIMITS.deadline_s when not given)."""
    result = SearchResult()
    wanted = set(regions)
    budget = budget or Budget()
    clouds = list(providers)
    for number, provider in enumerate(clouds):
        # Each cloud its share of what is left, then each of its regions its share of that.
        cloud_budget = budget.share(len(clouds) - number)
        opened = open_search(provider, env, budget)
        if isinstance(opened, RegionGap):
            result.gaps.append(opened)
            continue
        result.searches[provider] = opened
        names = set((known or {}).get(provider, set()))
        try:
            names |= set(opened.regions())
        except GpuctlError as error:
            gap = gap_of(provider, "*", error)
            if gap.credentials or not wanted:
                result.gaps.append(RegionGap(provider, "*", f"cannot list the regions: {gap.reason}", gap.credentials))
            if gap.credentials:
                continue
            names |= wanted  # the regions asked for, as given: the cloud says whether they exist
        if wanted:
            names &= wanted  # `--region`: a region of the other cloud is simply not this cloud's
        ordered = sorted(names)
        for index, region in enumerate(ordered):
            try:
                # Each region its share of what is left: one that answers a byte a second cannot spend
                # the time of every region after it (those would be gaps without having been asked).
                result.instances += opened.instances(region, cloud_budget.share(len(ordered) - index))
            except GpuctlError as error:
                result.gaps.append(gap_of(provider, region, error))
            else:
                result.searched.append((provider, region))
    return result
