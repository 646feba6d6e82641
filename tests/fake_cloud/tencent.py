"""A fake Tencent Cloud API 3.0 (CVM and VPC, the actions gpuctl calls) on 127.0.0.1, for the fake_cloud tier.

It checks every request the way the real API does (signature v3, TC3-HMAC-SHA256, as documented at
https://www.tencentcloud.com/document/api/213/30654 "Signature v3"):

    CanonicalRequest = Method \\n URI \\n Query \\n CanonicalHeaders \\n SignedHeaders \\n hex(sha256(payload))
    StringToSign     = "TC3-HMAC-SHA256" \\n Timestamp \\n Date/service/tc3_request \\n hex(sha256(CanonicalRequest))
    key              = HMAC(HMAC(HMAC("TC3" + SecretKey, Date), service), "tc3_request")
    Authorization    = TC3-HMAC-SHA256 Credential=SecretId/Date/service/tc3_request,
                       SignedHeaders=content-type;host, Signature=hex(HMAC(key, StringToSign))

and answers with the real shapes: `{"Response": {..., "RequestId"}}`, errors as
`{"Response": {"Error": {"Code", "Message"}, "RequestId"}}` with HTTP 200 and Content-Type
application/json (the SDK reads errors only under that type). Field names are the API's (see the
SDK's models.py). Tests set the state (instances, VPCs ... with their tags, what each zone sells,
quotas) and inject faults (an error code for the first N calls of an action, a slow answer).

Faults beyond the API's own error codes, for the hostile-answer corpus (tests/hostile/), each one
a thing the SDK is written to meet (tencentcloud/common/abstract_client.py of the installed
tencentcloud-sdk-python-common):

- an HTTP status other than 200, with or without a body (`Fault.status`, `Fault.body`): the SDK's
  `_check_status` raises ServerNetworkError for any status but 200, as a gateway before the API
  answers when the service is down (500/502/503);
- a body that is not the API's JSON, empty, `null`, or without `Response` (`Fault.body`): read by
  `_check_error` / `call_json` with `json.loads(...)["Response"]`;
- an answer of the right shape with a field of the wrong type (`Fault.reshape`: a string where
  the models.py of the SDK documents an array, a TotalCount of 1e308, a price "NaN");
- `paging`: a DescribeInstances that never ends: "first-page" answers the first page whatever the
  Offset, "fresh" a full page of new instances every time, both with a TotalCount that says more
  are left (the documented contract: Offset/Limit, Limit at most 100, TotalCount, is what they break).

Permissions: a SecretId listed in `policies` is a CAM sub-user with those policies attached; every
request is decided by toolkit.providers.policy on the resource CAM authorizes it on
(toolkit.providers.policy_scope: TerminateInstances and StopInstances per instance, with the
instance's tags as `qcs:resource_tag` "key&value"; everything else on all resources). A refusal is
the API's: `AuthFailure.UnauthorizedOperation` in the Response.Error shape, its message ending with
the action and resource, as real answers quote it ("you are not authorized to perform operation
(sms:SendSms)\nresource (*) has no permission", TencentCloud/tencentcloud-sdk-java#78; with a
resource ARN, TencentCloudBase/CloudBase-AI-Toolkit#130). A SecretId not listed is the account's own.

Released instances: `release(id)` takes an instance away as its ActionTimer or a spot reclaim
does; DescribeInstances with InstanceIds then leaves it out (TotalCount 0 when it was the only one:
the provider's read takes an empty InstanceSet as gone) and TerminateInstances answers
InvalidInstanceId.NotFound.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolkit.providers.policy import Policy, decide
from toolkit.providers.policy_scope import Target, request

# The actions of each service this fake answers (the API answers InvalidAction for others).
ACTIONS = {
    "cvm": frozenset({"DescribeInstances", "DescribeKeyPairs", "DescribeHpcClusters", "DescribeZoneInstanceConfigInfos",
                      "DescribeAccountQuota", "RunInstances", "InquiryPriceRunInstances", "DescribeRegions",
                      "TerminateInstances", "StopInstances", "DescribeImages"}),
    "vpc": frozenset({"DescribeVpcs", "DescribeSubnets", "DescribeSecurityGroups"}),
}
VERSIONS = {"cvm": "2017-03-12", "vpc": "2017-03-12"}
MAX_SKEW_S = 300  # "Timestamp ... differs from the server time by more than 5 minutes": SignatureExpire
_AUTHORIZATION = re.compile(
    r"TC3-HMAC-SHA256 Credential=(?P<id>[^/]+)/(?P<date>\d{4}-\d{2}-\d{2})/(?P<service>[a-z]+)/tc3_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<sig>[0-9a-f]{64})"
)


def sign(secret_key: str, date: str, service: str, string_to_sign: str) -> str:
    """The documented key derivation and signature (hex)."""
    def mac(key: bytes, text: str) -> bytes:
        return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()

    key = mac(mac(mac(("TC3" + secret_key).encode("utf-8"), date), service), "tc3_request")
    return hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def string_to_sign(method: str, uri: str, query: str, headers: Mapping[str, str], signed: list[str],
                   payload: bytes, timestamp: str, scope: str) -> str:
    # "key and value in lower case, leading and trailing spaces removed", one per line.
    canonical_headers = "".join(f"{name}:{headers.get(name, '').strip().lower()}\n" for name in signed)
    payload_hash = hashlib.sha256(payload).hexdigest()
    canonical = "\n".join([method, uri, query, canonical_headers, ";".join(signed), payload_hash])
    return "\n".join(["TC3-HMAC-SHA256", timestamp, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])


class ApiFault(Exception):  # noqa: N818 -- it is an API answer, not a bug
    def __init__(self, code: str, message: str) -> None:
        super().__init__(code)
        self.code = code
        self.message = message


@dataclass
class Fault:
    """Answer `action` (or every action: "*") with an error, late, or with something that is not the
    API's answer, for the next `times` calls.

    `code`: an API error ({"Response": {"Error": ...}}, HTTP 200, as the API answers errors).
    `status` / `body` / `content_type`: the raw HTTP answer instead (a gateway's 502, `null` ...).
    `reshape`: the successful Response object passed through it (a field of the wrong type).
    `drip_s`: the answer sent one byte at a time, this many seconds apart: every read of the socket
    gets a byte well within the SDK's timeout (requests' timeout bounds each read, not the answer).
    """

    action: str
    code: str | None = None
    message: str = ""
    delay_s: float = 0.0
    times: int = 1
    status: int = 200
    body: bytes | None = None
    content_type: str = "application/json"
    reshape: Callable[[dict[str, Any]], Any] | None = None
    drip_s: float = 0.0


@dataclass
class Call:
    service: str
    action: str
    params: dict[str, Any]
    region: str
    answered: str  # "ok" or the error code


@dataclass
class FakeTencentCloud:
    """The state behind the fake: what exists, what is sold, and the keys it accepts."""

    keys: dict[str, str] = field(default_factory=dict)  # SecretId -> SecretKey
    # SecretId -> the CAM policies attached to that sub-user (the module's docstring).
    policies: dict[str, list[Policy]] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # SecretId -> the token it needs, if any
    instances: list[dict[str, Any]] = field(default_factory=list)  # Instance objects
    vpcs: list[dict[str, Any]] = field(default_factory=list)
    subnets: list[dict[str, Any]] = field(default_factory=list)
    security_groups: list[dict[str, Any]] = field(default_factory=list)
    key_pairs: list[dict[str, Any]] = field(default_factory=list)
    hpc_clusters: list[dict[str, Any]] = field(default_factory=list)
    offers: list[dict[str, Any]] = field(default_factory=list)  # InstanceTypeQuotaItem objects (with Price)
    # InquiryPriceRunInstances: the system disk's hourly price per GiB, added to the offer's Price.
    disk_per_gib_hour: float = 0.0
    quota: dict[str, Any] = field(default_factory=dict)  # AccountQuota object
    # DescribeRegions: the region ids the account sees (RegionState AVAILABLE).
    regions: list[str] = field(default_factory=list)
    # Off: DescribeInstances lists every instance whatever the request's region (what older tests set
    # up). On: only those whose Placement.Zone is in the region the request was signed for, as the API.
    regional: bool = False
    faults: list[Fault] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    # RunInstances with DryRun: None passes; an error code refuses (as the real check does for stock).
    dry_run_error: tuple[str, str] | None = None
    # Instance types the API places in an HPC cluster only: RunInstances without HpcClusterId refuses
    # them, "高性能计算实例需指定对应的高性能计算集群" (InvalidParameterValue.InstanceTypeRequiredHpcCluster,
    # tencentcloud-sdk-python-cvm 3.1.178 errorcodes.py:467-468), and with one refuses other types.
    hcc_types: frozenset[str] = frozenset()
    # DescribeImages: Image objects (ImageId, ImageName, ImageType, CreatedTime), each with the instance
    # types it is offered for under "_InstanceTypes" (all types when absent).
    images: list[dict[str, Any]] = field(default_factory=list)
    recycled: set[str] = field(default_factory=set)  # PREPAID instances a terminate moved to the recycle bin
    # DescribeInstances that never ends (see the module's docstring): None, "first-page" or "fresh".
    paging: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def actions(self, name: str) -> list[Call]:
        return [call for call in self.calls if call.action == name]

    def release(self, instance_id: str) -> None:
        """The instance is gone, as after its ActionTimer or a spot reclaim."""
        with self.lock:
            self.instances = [i for i in self.instances if i["InstanceId"] != instance_id]

    def authorize(self, secret_id: str, service: str, action: str, params: Mapping[str, Any], region: str,
                  request_id: str) -> None:
        """CAM's decision for a sub-user with policies attached; ApiFault when it refuses."""
        attached = self.policies.get(secret_id)
        if attached is None:
            return
        targets: list[Target | None] = [None]
        if action in ("TerminateInstances", "StopInstances"):
            held = {i["InstanceId"]: i for i in self.instances}
            targets = [Target("instance", id_, region, {str(t["Key"]): str(t.get("Value", ""))
                                                        for t in held[id_].get("Tags") or ()})
                       for id_ in params.get("InstanceIds") or () if id_ in held] or [None]
        for target in targets:
            asked = request("tencentcloud", f"{service}:{action}", target)
            decision = decide(attached, asked)
            if not decision.allowed:
                raise ApiFault("AuthFailure.UnauthorizedOperation",
                               "You are not authorized to perform this operation. Check your CAM policies, and "
                               "ensure that you are using the correct access keys. [request id:"
                               f"{request_id}]you are not authorized to perform operation ({asked.action})\n"
                               f"resource ({decision.resource}) has no permission\n")

    # --- request handling ---------------------------------------------------------------------

    def authenticate(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[str, str]:
        """-> (service, action), or ApiFault with the code the real API uses."""
        match = _AUTHORIZATION.fullmatch(headers.get("authorization", ""))
        if match is None:
            raise ApiFault("AuthFailure.InvalidAuthorization", "Authorization header is not TC3-HMAC-SHA256.")
        secret_id, date, service = match["id"], match["date"], match["service"]
        if secret_id not in self.keys:
            raise ApiFault("AuthFailure.SecretIdNotFound", "The SecretId is not found, please ensure that your "
                                                           "SecretId is correct.")
        timestamp = headers.get("x-tc-timestamp", "")
        if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_SKEW_S:
            raise ApiFault("AuthFailure.SignatureExpire", "Signature expired. Timestamp and server time differ "
                                                          "by more than 5 minutes.")
        signed = match["signed"].split(";")
        if "content-type" not in signed or "host" not in signed or signed != sorted(signed):
            raise ApiFault("AuthFailure.InvalidAuthorization", "SignedHeaders must list content-type and host, "
                                                               "sorted.")
        if datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%d") != date:
            raise ApiFault("AuthFailure.SignatureFailure", "The credential date does not match the timestamp.")
        query = path.partition("?")[2]
        to_sign = string_to_sign(method, path.partition("?")[0], query, headers, signed, body, timestamp,
                                 f"{date}/{service}/tc3_request")
        if not hmac.compare_digest(sign(self.keys[secret_id], date, service, to_sign), match["sig"]):
            raise ApiFault("AuthFailure.SignatureFailure", "The provided credentials could not be validated. "
                                                           "Please check your signature is correct.")
        needed = self.tokens.get(secret_id)
        if needed is not None and headers.get("x-tc-token") != needed:
            raise ApiFault("AuthFailure.TokenFailure", "Token verification failed.")
        action = headers.get("x-tc-action", "")
        if service not in ACTIONS or action not in ACTIONS[service]:
            raise ApiFault("InvalidAction", f"The action `{action}` does not exist in service `{service}`.")
        if headers.get("x-tc-version") != VERSIONS[service]:
            raise ApiFault("NoSuchVersion", "The requested version does not exist.")
        if not headers.get("x-tc-region"):
            raise ApiFault("MissingParameter", "The request is missing a required parameter `Region`.")
        return service, action

    def fault_for(self, action: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times > 0 and fault.action in (action, "*"):
                    fault.times -= 1
                    return fault
        return None

    def answer(self, service: str, action: str, params: dict[str, Any], region: str = "") -> dict[str, Any]:
        if action in ("DescribeInstances", "TerminateInstances"):
            scoped: Callable[[dict[str, Any], str | None], dict[str, Any]] = getattr(self, f"_{action}")
            return scoped(params, region if self.regional else None)
        handler: Callable[[dict[str, Any]], dict[str, Any]] = getattr(self, f"_{action}")
        return handler(params)

    def in_region(self, region: str | None) -> list[dict[str, Any]]:
        """The instances a request signed for `region` sees (all of them: None)."""
        return [i for i in self.instances if region is None or i["Placement"]["Zone"].startswith(f"{region}-")]

    # --- actions ------------------------------------------------------------------------------

    def _page(self, items: list[dict[str, Any]], params: Mapping[str, Any], set_key: str) -> dict[str, Any]:
        offset, limit = int(params.get("Offset") or 0), int(params.get("Limit") or 20)
        if not 1 <= limit <= 100:
            raise ApiFault("InvalidParameterValue.LimitExceeded", "The value of `Limit` must be between 1 and 100.")
        return {"TotalCount": len(items), set_key: items[offset:offset + limit]}

    def _DescribeInstances(self, params: dict[str, Any], region: str | None = None) -> dict[str, Any]:  # noqa: N802
        if params.get("InstanceIds") and params.get("Filters"):
            raise ApiFault("InvalidParameter", "InstanceIds and Filters cannot be specified at the same time.")
        wanted = set(params.get("InstanceIds") or ())
        found = [i for i in self.in_region(region) if (not wanted or i["InstanceId"] in wanted)
                 and matches(i, params.get("Filters"), {
            "zone": lambda i: [i["Placement"]["Zone"]], "instance-id": lambda i: [i["InstanceId"]],
            "instance-name": lambda i: [i.get("InstanceName", "")],
            "instance-charge-type": lambda i: [i.get("InstanceChargeType", "")]})]
        if self.paging is not None:
            return self._endless(params, region or "ap-guangzhou")
        return self._page(found, params, "InstanceSet")

    def _endless(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        """A full page every time, whatever the Offset, and a TotalCount that says more are left."""
        offset = int(params.get("Offset") or 0) if self.paging == "fresh" else 0
        limit = int(params.get("Limit") or 20)
        page = [{"InstanceId": f"ins-endless{offset + n:08d}", "InstanceName": "endless", "InstanceType": "S5.SMALL1",
                 "Placement": {"Zone": f"{region}-1"}, "CreatedTime": "2026-01-01T00:00:00Z",
                 "InstanceState": "RUNNING", "Tags": [{"Key": "project", "Value": "endless"}]}
                for n in range(limit)]
        return {"TotalCount": 10**9, "InstanceSet": page}

    def _TerminateInstances(self, params: dict[str, Any], region: str | None = None) -> dict[str, Any]:  # noqa: N802
        ids = list(params.get("InstanceIds") or ())
        if not ids or len(ids) > 100:
            raise ApiFault("InvalidParameterValue", "The value of `InstanceIds` must list 1 to 100 instance ids.")
        known = {i["InstanceId"]: i for i in self.in_region(region)}
        missing = [id_ for id_ in ids if id_ not in known]
        if missing:
            raise ApiFault("InvalidInstanceId.NotFound", f"The instance `{missing[0]}` does not exist.")
        # "批量操作时，所有实例的付费类型必须一致" (cvm_client.py TerminateInstances, SDK 3.1.178); the code the API
        # answers a mixed batch with is not documented: the generic "参数组合不正确" one.
        charges = {known[id_].get("InstanceChargeType") or "POSTPAID_BY_HOUR" for id_ in ids}
        if len(charges) > 1:
            raise ApiFault("InvalidParameterCombination",
                           "The instances of one request must share one charge type, not "
                           f"{', '.join(sorted(charges))}.")
        # "包年包月实例首次调用本接口，实例将被移至回收站，再次调用本接口，实例将被销毁 ... 按量计费实例调用本接口将被
        # 直接销毁" (same docstring): a PREPAID instance goes to SHUTDOWN (the recycle bin) first.
        with self.lock:
            for id_ in ids:
                instance = known[id_]
                if (instance.get("InstanceChargeType") == "PREPAID"
                        and instance.get("InstanceState") != "SHUTDOWN"):
                    instance.update(InstanceState="SHUTDOWN", LatestOperation="TerminateInstances",
                                    LatestOperationState="SUCCESS")
            recycled = {id_ for id_ in ids if known[id_].get("InstanceChargeType") == "PREPAID"
                        and known[id_].get("LatestOperation") == "TerminateInstances" and id_ not in self.recycled}
            self.recycled |= recycled
            self.instances = [i for i in self.instances if i["InstanceId"] not in set(ids) - recycled]
        return {}

    def _StopInstances(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        ids = list(params.get("InstanceIds") or ())
        held = {i["InstanceId"]: i for i in self.instances}
        missing = [id_ for id_ in ids if id_ not in held]
        if not ids or missing:
            raise ApiFault("InvalidInstanceId.NotFound", f"The instance `{(missing or ['?'])[0]}` does not exist.")
        with self.lock:
            for id_ in ids:
                held[id_]["InstanceState"] = "STOPPED"
                held[id_]["StoppedMode"] = params.get("StoppedMode", "KEEP_CHARGING")
        return {}

    def _DescribeRegions(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        rows = [{"Region": r, "RegionName": r, "RegionState": "AVAILABLE"} for r in self.regions]
        return {"TotalCount": len(rows), "RegionSet": rows}

    def _DescribeKeyPairs(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        found = [k for k in self.key_pairs if matches(k, params.get("Filters"), {"key-name": lambda k: [k["KeyName"]]})]
        return self._page(found, params, "KeyPairSet")

    def _DescribeHpcClusters(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        found = [h for h in self.hpc_clusters
                 if matches(h, params.get("Filters"), {})
                 and (not params.get("Zone") or h.get("Zone") == params["Zone"])
                 and (not params.get("Name") or h.get("Name") == params["Name"])]
        return self._page(found, params, "HpcClusterSet")

    def _DescribeZoneInstanceConfigInfos(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        found = [o for o in self.offers if matches(o, params.get("Filters"), {
            "zone": lambda o: [o["Zone"]], "instance-type": lambda o: [o["InstanceType"]],
            "instance-family": lambda o: [o.get("InstanceFamily", "")],
            "instance-charge-type": lambda o: [o["InstanceChargeType"]]})]
        return {"InstanceTypeQuotaSet": found}

    def _DescribeAccountQuota(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        zones = next((f["Values"] for f in params.get("Filters") or () if f.get("Name") == "zone"), None)
        quota = {key: [q for q in value if zones is None or q.get("Zone") in zones]
                 for key, value in self.quota.items()}
        return {"AppId": 1250000000, "AccountQuotaOverview": {"Region": "", "AccountQuota": quota}}

    def _RunInstances(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        if params.get("DryRun") is not True:
            raise ApiFault("UnauthorizedOperation", "this fake never creates instances: send DryRun")
        for required in ("InstanceType", "ImageId"):
            if not params.get(required):
                raise ApiFault("MissingParameter", f"The request is missing a required parameter `{required}`.")
        if not (params.get("Placement") or {}).get("Zone"):
            raise ApiFault("MissingParameter", "The request is missing a required parameter `Placement.Zone`.")
        itype = str(params["InstanceType"])
        if itype in self.hcc_types and not params.get("HpcClusterId"):
            raise ApiFault("InvalidParameterValue.InstanceTypeRequiredHpcCluster",
                           "高性能计算实例需指定对应的高性能计算集群。")
        if params.get("HpcClusterId"):
            if itype not in self.hcc_types:
                raise ApiFault("InvalidParameterValue.InstanceTypeNotSupportHpcCluster",
                               "实例类型不可加入高性能计算集群。")
            if not any(h.get("HpcClusterId") == params["HpcClusterId"] for h in self.hpc_clusters):
                raise ApiFault("ResourceNotFound.HpcCluster", "高性能计算集群不存在。")
        if params.get("ImageId") not in {i["ImageId"] for i in self.images} and self.images:
            raise ApiFault("InvalidImageId.NotFound", f"The image `{params.get('ImageId')}` does not exist.")
        if self.dry_run_error is not None:
            raise ApiFault(*self.dry_run_error)
        # A dry run that would succeed: the documented answer is the common error DryRunOperation.
        raise ApiFault("DryRunOperation", "DryRun Operation. The request would have succeeded, but DryRun was set.")

    def _DescribeImages(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        itype = params.get("InstanceType")
        found = [{k: v for k, v in i.items() if not k.startswith("_")} for i in self.images
                 if matches(i, params.get("Filters"), {"image-type": lambda i: [i.get("ImageType", "")],
                                                       "image-id": lambda i: [i["ImageId"]]})
                 and (not itype or itype in i.get("_InstanceTypes", (itype,)))]
        return self._page(found, params, "ImageSet")

    def _InquiryPriceRunInstances(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        for required in ("InstanceType", "ImageId"):
            if not params.get(required):
                raise ApiFault("MissingParameter", f"The request is missing a required parameter `{required}`.")
        zone = (params.get("Placement") or {}).get("Zone")
        if not zone:
            raise ApiFault("MissingParameter", "The request is missing a required parameter `Placement.Zone`.")
        charge = params.get("InstanceChargeType") or "POSTPAID_BY_HOUR"
        row = next((o for o in self.offers if (o["Zone"], o["InstanceType"], o["InstanceChargeType"])
                    == (zone, params["InstanceType"], charge)), None)
        if row is None or row.get("Status") != "SELL":
            raise ApiFault("ResourcesSoldOut.SpecifiedInstanceType", "The specified instance type is sold out.")
        disk = float(self.disk_per_gib_hour) * int((params.get("SystemDisk") or {}).get("DiskSize") or 50)
        item = dict(row.get("Price") or {})
        count = int(params.get("InstanceCount") or 1)
        for key in ("UnitPrice", "UnitPriceDiscount"):
            if item.get(key) is not None:
                item[key] = round((float(item[key]) + disk) * count, 6)
        # The documented shape: Price {InstancePrice: ItemPrice, BandwidthPrice: ItemPrice}.
        return {"Price": {"InstancePrice": item, "BandwidthPrice": {"UnitPrice": 0.0, "ChargeUnit": "HOUR",
                                                                    "UnitPriceDiscount": 0.0, "Discount": 100.0}}}

    def _DescribeVpcs(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        found = [v for v in self.vpcs if matches(v, params.get("Filters"), {"vpc-id": lambda v: [v["VpcId"]],
                                                                           "vpc-name": lambda v: [v["VpcName"]]})]
        return self._page(found, params, "VpcSet")

    def _DescribeSubnets(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        found = [s for s in self.subnets if matches(s, params.get("Filters"), {"vpc-id": lambda s: [s["VpcId"]],
                                                                              "zone": lambda s: [s.get("Zone", "")]})]
        return self._page(found, params, "SubnetSet")

    def _DescribeSecurityGroups(self, params: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        found = [g for g in self.security_groups if matches(g, params.get("Filters"), {
            "security-group-id": lambda g: [g["SecurityGroupId"]]})]
        return self._page(found, params, "SecurityGroupSet")


Fields = Mapping[str, Callable[[Mapping[str, Any]], list[str]]]


def matches(item: Mapping[str, Any], filters: Any, fields: Fields) -> bool:
    """Filters as the API applies them: AND between filters, OR between one filter's values; tag:<key>
    and tag-key on the item's Tags / TagSet. An unknown filter name is an error, as in the API."""
    tags = {str(t["Key"]): str(t.get("Value", "")) for t in item.get("Tags") or item.get("TagSet") or ()}
    for one in filters or ():
        name, values = one.get("Name", ""), list(one.get("Values") or ())
        if name.startswith("tag:"):
            have = [tags[name[4:]]] if name[4:] in tags else []
        elif name == "tag-key":
            have = list(tags)
        elif name == "tag-value":
            have = list(tags.values())
        elif name in fields:
            have = fields[name](item)
        else:
            raise ApiFault("InvalidFilter", f"The filter `{name}` is not supported.")
        if not set(have) & set(values):
            return False
    return True


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        cloud = self.server.cloud
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {key.lower(): value for key, value in self.headers.items()}
        service, action, region, params = "?", headers.get("x-tc-action", "?"), headers.get("x-tc-region", ""), {}
        request_id = str(uuid.uuid4())
        try:
            service, action = cloud.authenticate("POST", self.path, headers, body)
            try:
                params = json.loads(body or b"{}")
            except json.JSONDecodeError:
                raise ApiFault("InvalidParameter", "The request body is not JSON.") from None
            secret_id = _AUTHORIZATION.fullmatch(headers.get("authorization", ""))["id"]  # type: ignore[index]
            cloud.authorize(secret_id, service, action, params, region, request_id)
            fault = cloud.fault_for(action)
            if fault is not None and fault.delay_s:
                time.sleep(fault.delay_s)
            if fault is not None and fault.code:
                raise ApiFault(fault.code, fault.message or f"{fault.code} (injected)")
            response: Any = cloud.answer(service, action, params, region)
            answered = "ok"
            if fault is not None and fault.reshape is not None:
                response, answered = fault.reshape(response), "reshaped"
        except ApiFault as exc:
            fault = None
            response, answered = {"Error": {"Code": exc.code, "Message": exc.message}}, exc.code
        status, content_type = 200, "application/json"
        if fault is not None and (fault.body is not None or fault.status != 200):
            status, content_type, answered = fault.status, fault.content_type, f"raw {fault.status}"
        with cloud.lock:
            cloud.calls.append(Call(service, action, params, region, answered))
        if isinstance(response, dict):
            response["RequestId"] = request_id
        data = json.dumps({"Response": response}).encode("utf-8")
        if fault is not None and fault.body is not None:
            data = fault.body
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if fault is not None and fault.drip_s:
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(fault.drip_s)
            else:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (timeout tests)
            pass

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: pytest shows the calls list on failure instead


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cloud: FakeTencentCloud


@contextmanager
def serve(cloud: FakeTencentCloud) -> Iterator[str]:
    """Serve `cloud` on 127.0.0.1 (a free port) in a thread; yields the endpoint URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.cloud = cloud
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fake-tencentcloud", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
