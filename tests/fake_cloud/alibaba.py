"""A fake Alibaba Cloud ECS API (2014-05-26, the price actions gpuctl calls) on 127.0.0.1, for the fake_cloud tier.

It checks every request the way the real API does with signature method V3 (ACS3-HMAC-SHA256, as
documented in "Request syntax and signature method V3",
https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature, and as
`alibabacloud_tea_openapi.utils.Utils.get_authorization` of the installed SDK computes it):

    CanonicalRequest = Method \\n URI \\n CanonicalQuery \\n CanonicalHeaders \\n SignedHeaders \\n HashedPayload
    StringToSign     = "ACS3-HMAC-SHA256" \\n hex(sha256(CanonicalRequest))
    Authorization    = ACS3-HMAC-SHA256 Credential=AccessKeyId,SignedHeaders=a;b;...,
                       Signature=hex(HMAC(secret, StringToSign))

The canonical query sorts the parameters and percent-encodes values (RFC 3986, `~` kept); the
canonical headers are every signed header, lower-case, trimmed, sorted; every common request header
(host, x-acs-*) must be signed, and x-acs-content-sha256 must be the payload's hash. Answers use the
real shapes: RPC JSON bodies with `RequestId`; errors as HTTP 4xx/5xx with
`{"RequestId", "HostId", "Code", "Message", "Recommend"}` (the SDK reads every error body as JSON
unless its type is text/xml). Field names are the API's (the SDK's models, and the sample responses
of the DescribePrice / DescribeSpotPriceHistory / DescribeSpotAdvice API references). Tests set the
prices and inject faults (an error code for the first N calls of an action).

Faults beyond the API's own error codes, for the hostile-answer corpus (tests/hostile/), each one
a thing the installed SDK core is written to meet (alibabacloud_tea_openapi/client.py
`do_request`, darabonba/utils/stream.py `read_as_json`):

- an HTTP error status with a body that is not JSON or is empty (`Fault.status`, `Fault.body`), as
  a gateway answers before the API when it is down (502/503); with the documented error body
  ({"RequestId", "HostId", "Code", "Message"}) but no Code;
- a body that is not JSON, `null`, or an object without the documented keys (`Fault.body`);
- an answer of the right shape with a field of the wrong type (`Fault.reshape`: a string where
  the SDK's models document a list, a TradePrice of "NaN", -1 or 1e308, no TradePrice at all);
- a slow answer (`Fault.delay_s`), past the client's read timeout;
- `paging`: a DescribeInstances that never ends: "same-token" gives the same NextToken (and page)
  every time, "fresh" a full page of new instances and a new NextToken every time (the documented
  contract, MaxResults at most 100 and NextToken empty on the last page, is what they break).

Permissions: a key listed in `policies` is a RAM user with those policies attached; every request
is decided by toolkit.providers.policy on the resource ECS authorizes it on
(toolkit.providers.policy_scope: DeleteInstances per instance, with the instance's tags as
`acs:ResourceTag/<key>`; every other action on all resources). A refusal is ECS's: HTTP 403,
`Forbidden.RAM` with its message, and the `AccessDeniedDetail` object RAM adds to an access-denied
answer (its fields as the RAM API reference of DecodeDiagnosticMessage and the installed SDK core,
alibabacloud_tea_openapi `get_access_denied_detail`, read them: AuthAction, AuthPrincipalType,
AuthPrincipalOwnerId, AuthPrincipalDisplayName, NoPermissionType ImplicitDeny/ExplicitDeny,
PolicyType, EncodedDiagnosticMessage). A key not listed is the account's own and may do anything.

Released instances: `release(id)` takes an instance away as the TTL (auto_release_time) or a spot
reclaim does; DescribeInstances with InstanceIds then lists it no more (an empty page, as the API
answers for an id it does not hold) and DeleteInstances answers InvalidInstanceId.NotFound.

DescribeSpotPriceHistory pages by Offset / NextOffset: with `spot_page_rows` set, each answer holds
at most that many points and NextOffset is the row to ask next; on the last page it is 0 (paper
only: the SDK model says NextOffset is "the starting row of the next page" and says nothing of the
last one). Unset, every point comes in one answer.
"""

from __future__ import annotations

import base64
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
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote

from toolkit.providers.policy import Policy, decide
from toolkit.providers.policy_scope import ACCOUNT, Target, request

VERSION = "2014-05-26"
ACTIONS = frozenset({"DescribePrice", "DescribeSpotPriceHistory", "DescribeSpotAdvice", "DescribeRegions",
                     "DescribeInstances", "DeleteInstances",
                     # The lifecycle agent's, with the instance role's STS credentials.
                     "StopInstance", "DeleteInstance"})
MAX_SKEW = timedelta(minutes=15)  # x-acs-date: "within 15 minutes" of the server's time
# Every common request header present must be signed (Authorization aside).
MUST_SIGN = ("host", "x-acs-action", "x-acs-content-sha256", "x-acs-date", "x-acs-signature-nonce", "x-acs-version")
_AUTHORIZATION = re.compile(
    r"ACS3-HMAC-SHA256 Credential=(?P<id>[^,]+),SignedHeaders=(?P<signed>[a-z0-9;-]+),Signature=(?P<sig>[0-9a-f]{64})"
)

# The messages the real API gives for these codes (ECS error center / common errors).
MESSAGES = {
    "IncompleteSignature": "The request signature does not conform to Aliyun standards.",
    "SignatureDoesNotMatch": "Specified signature does not match our calculation.",
    "InvalidAccessKeyId.NotFound": "Specified access key is not found.",
    "InvalidTimeStamp.Expired": "Specified time stamp or date value is expired.",
    "SignatureNonceUsed": "Specified signature nonce was used already.",
    "InvalidSecurityToken.Expired": "Specified SecurityToken is expired.",
    "Forbidden.RAM": "User not authorized to operate on the specified resource, or this API doesn't support RAM.",
    "Throttling": "Request was denied due to request throttling.",
    "InvalidInstanceType.NotFound": "The specified InstanceType does not exist.",
    "InvalidAction.NotFound": "Specified api is not found, please check your url and method.",
    "MissingParameter": "The input parameter that is mandatory for processing this request is not supplied.",
    "InternalError": "The request processing has failed due to some unknown error, exception or failure.",
    "InvalidInstanceId.NotFound": "The specified InstanceId does not exist.",
    "IncorrectInstanceStatus": "The current status of the resource does not support this operation.",
}
STATUS = {
    "IncompleteSignature": 400, "SignatureDoesNotMatch": 400, "InvalidAccessKeyId.NotFound": 404,
    "InvalidTimeStamp.Expired": 400, "SignatureNonceUsed": 400, "InvalidSecurityToken.Expired": 400,
    "Forbidden.RAM": 403, "Throttling": 403, "InvalidInstanceType.NotFound": 404, "InvalidAction.NotFound": 404,
    "MissingParameter": 400, "InternalError": 500, "InvalidInstanceId.NotFound": 404, "IncorrectInstanceStatus": 403,
}


def canonical_query(params: Mapping[str, str]) -> str:
    return "&".join(f"{quote(k, safe='~')}={quote(v, safe='~')}" for k, v in sorted(params.items()))


def string_to_sign(method: str, uri: str, params: Mapping[str, str], headers: Mapping[str, str],
                   signed: list[str], payload_hash: str) -> str:
    canonical_headers = "".join(f"{name}:{headers.get(name, '').strip()}\n" for name in signed)
    canonical = "\n".join([method, uri or "/", canonical_query(params), canonical_headers, ";".join(signed),
                           payload_hash])
    return "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sign(secret: str, to_sign: str) -> str:
    return hmac.new(secret.encode("utf-8"), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


class ApiFault(Exception):  # noqa: N818 -- it is an API answer, not a bug
    def __init__(self, code: str, message: str | None = None, status: int | None = None,
                 detail: dict[str, Any] | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.message = message or MESSAGES.get(code, code)
        self.status = status or STATUS.get(code, 400)
        self.detail = detail  # AccessDeniedDetail of a RAM refusal


@dataclass
class Fault:
    """Answer `action` (or every action: "*") with an error, late, or with something that is not the
    API's answer, for the next `times` calls.

    `code`: an API error in the documented shape (its HTTP status from STATUS unless `status`).
    `status` + `body` (+ `content_type`): the raw HTTP answer instead (a gateway's 502, `null` ...).
    `reshape`: the successful answer passed through it (a field of the wrong type).
    """

    action: str
    code: str | None = None
    times: int = 1
    status: int | None = None
    delay_s: float = 0.0
    body: bytes | None = None
    content_type: str = "application/json;charset=utf-8"
    reshape: Callable[[dict[str, Any]], Any] | None = None


@dataclass
class Call:
    action: str
    params: dict[str, str]
    answered: str  # "ok" or the error code


@dataclass
class Offer:
    """What one instance type costs in one region (CNY per hour)."""

    region: str
    instance_type: str
    pay_as_you_go: float  # the instance part, list price
    discount: float = 0.0  # per hour off the instance part
    disk_per_gib_hour: dict[str, float] = field(default_factory=dict)  # system disk category -> price
    spot: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # zone -> [(Timestamp, SpotPrice)]
    # DescribeSpotAdvice, zone -> (InterruptRateDesc, InterruptionRate, AverageSpotDiscount); a spot
    # zone left out here is one the advice does not cover.
    advice: dict[str, tuple[str, float, int]] = field(default_factory=dict)


@dataclass
class FakeAlibabaCloud:
    keys: dict[str, str] = field(default_factory=dict)  # AccessKeyId -> secret
    tokens: dict[str, str] = field(default_factory=dict)  # AccessKeyId -> the token it needs
    denied: dict[str, set[str]] = field(default_factory=dict)  # AccessKeyId -> actions RAM refuses
    # AccessKeyId -> the RAM policies attached to that user (the module's docstring).
    policies: dict[str, list[Policy]] = field(default_factory=dict)
    offers: list[Offer] = field(default_factory=list)
    # DescribeInstances / DeleteInstances: Instance objects as the API lists them (RegionId, ZoneId,
    # InstanceId, InstanceType, CreationTime, Status, Tags {Tag: [{TagKey, TagValue}]}).
    instances: list[dict[str, Any]] = field(default_factory=list)
    # DescribeRegions: the region ids the account sees.
    regions: list[str] = field(default_factory=list)
    currency: str = "CNY"
    # DescribeInstances that never ends (see the module's docstring): None, "same-token" or "fresh".
    paging: str | None = None
    # DescribeSpotPriceHistory rows per page, paged by Offset / NextOffset (the SDK models' "starting
    # row" fields); None: one page. The last page answers NextOffset 0: the value the real API sends
    # there was not read (docs/alicloud.md, "verified only on paper").
    spot_page_rows: int | None = None
    faults: list[Fault] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    nonces: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def actions(self, name: str) -> list[Call]:
        return [call for call in self.calls if call.action == name]

    def release(self, instance_id: str) -> None:
        """The instance is gone, as after its auto-release time or a spot reclaim."""
        with self.lock:
            self.instances = [i for i in self.instances if i["InstanceId"] != instance_id]

    # --- request handling ---------------------------------------------------------------------

    def authenticate(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> str:
        """-> the action, or ApiFault with the code the real API uses (RAM's refusal included)."""
        match = _AUTHORIZATION.fullmatch(headers.get("authorization", ""))
        if match is None:
            raise ApiFault("IncompleteSignature")
        signed = match["signed"].split(";")
        present = [name for name in MUST_SIGN if name in headers]
        if signed != sorted(signed) or any(name not in signed for name in present) \
                or any(name not in headers for name in MUST_SIGN):
            raise ApiFault("IncompleteSignature")
        key_id = match["id"]
        if key_id not in self.keys:
            raise ApiFault("InvalidAccessKeyId.NotFound")
        try:
            sent_at = datetime.strptime(headers["x-acs-date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise ApiFault("InvalidTimeStamp.Expired") from None
        if abs(datetime.now(UTC) - sent_at) > MAX_SKEW:
            raise ApiFault("InvalidTimeStamp.Expired")
        payload_hash = headers["x-acs-content-sha256"]
        uri, _, query = path.partition("?")
        params = dict(parse_qsl(query, keep_blank_values=True))
        to_sign = string_to_sign(method, uri, params, headers, signed, payload_hash)
        if payload_hash != hashlib.sha256(body).hexdigest() or \
                not hmac.compare_digest(sign(self.keys[key_id], to_sign), match["sig"]):
            # The real message goes on with the server's string to sign; it holds no secret.
            raise ApiFault("SignatureDoesNotMatch",
                           f"{MESSAGES['SignatureDoesNotMatch']} server string to sign is:{to_sign}")
        with self.lock:
            nonce = headers["x-acs-signature-nonce"]
            if nonce in self.nonces:
                raise ApiFault("SignatureNonceUsed")
            self.nonces.add(nonce)
        needed = self.tokens.get(key_id)
        if needed is not None and headers.get("x-acs-security-token") != needed:
            raise ApiFault("InvalidSecurityToken.Expired")
        action = headers["x-acs-action"]
        if action not in ACTIONS or headers["x-acs-version"] != VERSION:
            raise ApiFault("InvalidAction.NotFound")
        if action in self.denied.get(key_id, set()):
            raise ApiFault("Forbidden.RAM")
        self.authorize(key_id, action, dict(parse_qsl(query, keep_blank_values=True)))
        return action

    def authorize(self, key_id: str, action: str, params: Mapping[str, str]) -> None:
        """RAM's decision for a key with policies attached; ApiFault Forbidden.RAM when it refuses."""
        attached = self.policies.get(key_id)
        if attached is None:
            return
        targets: list[Target | None] = [None]
        if action in ("DeleteInstances", "DeleteInstance", "StopInstance"):
            held = {i["InstanceId"]: i for i in self.instances}
            ids = [value for key, value in sorted(params.items()) if re.fullmatch(r"InstanceId(\.\d+)?", key)]
            # An id it does not hold is the action's own InvalidInstanceId.NotFound, answered after this.
            targets = [Target("instance", id_, params.get("RegionId", "*"), tags_of(held[id_]))
                       for id_ in ids if id_ in held] or [None]
        for target in targets:
            asked = request("alicloud", f"ecs:{action}", target)
            decision = decide(attached, asked)
            if not decision.allowed:
                diagnostic = base64.b64encode(f"{asked.action} {decision.resource}".encode()).decode()
                raise ApiFault("Forbidden.RAM", detail={
                    "AuthAction": asked.action, "AuthPrincipalType": "SubUser",
                    "AuthPrincipalOwnerId": ACCOUNT["alicloud"], "AuthPrincipalDisplayName": f"user-{key_id[-6:]}",
                    "NoPermissionType": "ExplicitDeny" if decision.why.startswith("denied") else "ImplicitDeny",
                    "PolicyType": "AccountLevelIdentityBasedPolicy",
                    "EncodedDiagnosticMessage": diagnostic,
                })

    def fault_for(self, action: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times > 0 and fault.action in (action, "*"):
                    fault.times -= 1
                    return fault
        return None

    def offer(self, params: Mapping[str, str]) -> Offer:
        for required in ("RegionId", "InstanceType"):
            if not params.get(required):
                raise ApiFault("MissingParameter", f"{MESSAGES['MissingParameter']} ({required})")
        for offer in self.offers:
            if offer.region == params["RegionId"] and offer.instance_type == params["InstanceType"]:
                return offer
        raise ApiFault("InvalidInstanceType.NotFound")

    # --- actions ------------------------------------------------------------------------------

    def _DescribePrice(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802 -- the action's name
        if params.get("ResourceType", "instance") != "instance" or params.get("PriceUnit", "Hour") != "Hour":
            raise ApiFault("InvalidParameter", "this fake prices instances by the hour only")
        offer = self.offer(params)
        strategy = params.get("SpotStrategy", "NoSpot")
        if strategy == "NoSpot":
            original, discount = offer.pay_as_you_go, offer.discount
        elif strategy == "SpotAsPriceGo":
            zone = params.get("ZoneId")
            points = offer.spot.get(zone or "") if zone else None
            if not points:
                raise ApiFault("InvalidZoneId.NotFound", "The specified zone does not offer spot instances.", 404)
            original, discount = max(points)[1], 0.0  # the latest point is the price now
        else:
            raise ApiFault("InvalidParameter", "this fake knows NoSpot and SpotAsPriceGo")
        details = [_detail("instanceType", original, discount)]
        category = params.get("SystemDisk.Category")
        if category:
            size = int(params.get("SystemDisk.Size") or 40)
            per_gib = offer.disk_per_gib_hour.get(category)
            if per_gib is None:
                raise ApiFault("InvalidSystemDiskCategory.ValueNotSupported",
                               'The specified parameter "SystemDisk.Category" is not valid.')
            details.append(_detail("systemDisk", round(per_gib * size, 6), 0.0))
        total = round(sum(d["OriginalPrice"] for d in details), 6)
        total_discount = round(sum(d["DiscountPrice"] for d in details), 6)
        return {"PriceInfo": {
            "Rules": {"Rule": []},
            "Price": {"OriginalPrice": total, "DiscountPrice": total_discount, "Currency": self.currency,
                      "TradePrice": round(total - total_discount, 6), "DetailInfos": {"DetailInfo": details}},
        }}

    def _DescribeSpotPriceHistory(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        if not params.get("NetworkType"):
            raise ApiFault("MissingParameter", f"{MESSAGES['MissingParameter']} (NetworkType)")
        offer = self.offer(params)
        start, end = params.get("StartTime"), params.get("EndTime")
        if start and end and _time(end) - _time(start) > timedelta(days=30):
            raise ApiFault("InvalidParams.StartTime", "The time span between StartTime and EndTime exceeds 30 days.")
        rows = []
        for zone, points in sorted(offer.spot.items()):
            if params.get("ZoneId") and zone != params["ZoneId"]:
                continue
            for stamp, price in sorted(points):
                if (start and _time(stamp) < _time(start)) or (end and _time(stamp) > _time(end)):
                    continue
                rows.append({"IoOptimized": "optimized", "ZoneId": zone, "SpotPrice": price, "Timestamp": stamp,
                             "NetworkType": params["NetworkType"], "InstanceType": offer.instance_type,
                             "OriginPrice": offer.pay_as_you_go})
        row = int(params.get("Offset") or 0)
        size = self.spot_page_rows or max(len(rows), 1)
        page = rows[row:row + size]
        more = row + size < len(rows)
        return {"Currency": self.currency, "NextOffset": row + size if more else 0,
                "SpotPrices": {"SpotPriceType": page}}

    def _DescribeSpotAdvice(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        # Shape of the API reference's sample answer: AvailableSpotZones.AvailableSpotZone[] with
        # ZoneId and AvailableSpotResources.AvailableSpotResource[]; a type it has no advice for is
        # simply absent (no error).
        if not params.get("RegionId"):
            raise ApiFault("MissingParameter", f"{MESSAGES['MissingParameter']} (RegionId)")
        types = [value for key, value in sorted(params.items()) if re.fullmatch(r"InstanceTypes\.\d+", key)]
        if len(types) > 10:
            raise ApiFault("InvalidParameter", "The specified parameter InstanceTypes.N is not valid.")
        zones: dict[str, list[dict[str, Any]]] = {}
        for offer in self.offers:
            if offer.region != params["RegionId"] or (types and offer.instance_type not in types):
                continue
            for zone, (band, rate, discount) in sorted(offer.advice.items()):
                if params.get("ZoneId") and zone != params["ZoneId"]:
                    continue
                zones.setdefault(zone, []).append({"InstanceType": offer.instance_type, "InterruptRateDesc": band,
                                                   "InterruptionRate": rate, "AverageSpotDiscount": discount})
        return {"RegionId": params["RegionId"], "AvailableSpotZones": {"AvailableSpotZone": [
            {"ZoneId": zone, "AvailableSpotResources": {"AvailableSpotResource": rows}}
            for zone, rows in sorted(zones.items())]}}

    def _DescribeRegions(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        rows = [{"RegionId": r, "LocalName": r, "RegionEndpoint": f"ecs.{r}.aliyuncs.com", "Status": "available"}
                for r in self.regions]
        return {"Regions": {"Region": rows}}

    def _DescribeInstances(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        if not params.get("RegionId"):
            raise ApiFault("MissingParameter", f"{MESSAGES['MissingParameter']} (RegionId)")
        wanted = numbered(params, "Tag", ("Key", "Value"))
        # InstanceIds: a JSON array of ids; an id the API does not hold (released) is simply not listed.
        ids = json.loads(params["InstanceIds"]) if params.get("InstanceIds") else None
        found = [i for i in self.instances if i.get("RegionId") == params["RegionId"]
                 and all(has_tag(i, tag.get("Key", ""), tag.get("Value")) for tag in wanted)
                 and (ids is None or i["InstanceId"] in ids)]
        # Paged by MaxResults/NextToken (the documented way; NextToken is the next offset here).
        size = int(params.get("MaxResults") or 10)
        if not 1 <= size <= 100:
            raise ApiFault("InvalidParameter", "The specified parameter MaxResults is not valid.")
        if self.paging is not None:
            return self._endless(params, size)
        start = int(params.get("NextToken") or 0)
        page = found[start:start + size]
        more = start + size < len(found)
        return {"Instances": {"Instance": page}, "TotalCount": len(found),
                "NextToken": str(start + size) if more else ""}

    def _endless(self, params: Mapping[str, str], size: int) -> dict[str, Any]:
        """A full page every time and a NextToken that says more are left."""
        start = int(params.get("NextToken") or 0) if self.paging == "fresh" else 0
        page = [{"InstanceId": f"i-endless{start + n:08d}", "InstanceName": "endless", "InstanceType": "ecs.g7.large",
                 "RegionId": params["RegionId"], "ZoneId": f"{params['RegionId']}-a", "Status": "Running",
                 "CreationTime": "2026-01-01T00:00Z", "Tags": {"Tag": [{"TagKey": "project", "TagValue": "endless"}]}}
                for n in range(size)]
        return {"Instances": {"Instance": page}, "TotalCount": 10**9,
                "NextToken": str(start + size) if self.paging == "fresh" else "0"}

    def _DeleteInstances(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        ids = [value for key, value in sorted(params.items()) if re.fullmatch(r"InstanceId\.\d+", key)]
        if not params.get("RegionId") or not ids:
            raise ApiFault("MissingParameter", f"{MESSAGES['MissingParameter']} (RegionId, InstanceId.N)")
        held = {i["InstanceId"]: i for i in self.instances if i.get("RegionId") == params["RegionId"]}
        missing = [id_ for id_ in ids if id_ not in held]
        if missing:
            raise ApiFault("InvalidInstanceId.NotFound")
        # Booleans arrive as the SDK writes them ("True"); the API reads them without regard to case.
        if params.get("Force", "").lower() != "true" and any(held[id_].get("Status") == "Running" for id_ in ids):
            raise ApiFault("IncorrectInstanceStatus")
        if params.get("DryRun", "").lower() == "true":
            raise ApiFault("DryRunOperation", "Request validation has been passed with DryRun flag set.", 400)
        with self.lock:
            self.instances = [i for i in self.instances if i["InstanceId"] not in ids]
        return {}


    def _StopInstance(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        instance = self._one_instance(params)
        with self.lock:
            instance["Status"] = "Stopped"
            instance["StoppedMode"] = params.get("StoppedMode", "KeepCharging")
        return {}

    def _DeleteInstance(self, params: Mapping[str, str]) -> dict[str, Any]:  # noqa: N802
        instance = self._one_instance(params)
        if params.get("Force", "").lower() != "true" and instance.get("Status") == "Running":
            raise ApiFault("IncorrectInstanceStatus")
        self.release(instance["InstanceId"])
        return {}

    def _one_instance(self, params: Mapping[str, str]) -> dict[str, Any]:
        if not params.get("InstanceId"):
            raise ApiFault("MissingParameter", f"{MESSAGES['MissingParameter']} (InstanceId)")
        for instance in self.instances:
            if instance["InstanceId"] == params["InstanceId"]:
                return instance
        raise ApiFault("InvalidInstanceId.NotFound")


def numbered(params: Mapping[str, str], prefix: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    """RPC list parameters `Prefix.N.Field` -> [{Field: value}], in N order."""
    found: dict[int, dict[str, str]] = {}
    for key, value in params.items():
        match = re.fullmatch(rf"{prefix}\.(\d+)\.({'|'.join(fields)})", key)
        if match:
            found.setdefault(int(match[1]), {})[match[2]] = value
    return [found[n] for n in sorted(found)]


def tags_of(instance: Mapping[str, Any]) -> dict[str, str]:
    return {str(t.get("TagKey")): str(t.get("TagValue") or "") for t in (instance.get("Tags") or {}).get("Tag") or ()}


def has_tag(instance: Mapping[str, Any], key: str, value: str | None) -> bool:
    for tag in (instance.get("Tags") or {}).get("Tag") or ():
        if tag.get("TagKey") == key and (value is None or tag.get("TagValue") == value):
            return True
    return False


def _detail(resource: str, original: float, discount: float) -> dict[str, Any]:
    return {"Resource": resource, "OriginalPrice": original, "DiscountPrice": discount,
            "TradePrice": round(original - discount, 6), "SubRules": {"Rule": []}}


def _time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        cloud = self.server.cloud
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {key.lower(): value for key, value in self.headers.items()}
        params = dict(parse_qsl(self.path.partition("?")[2], keep_blank_values=True))
        action, status = headers.get("x-acs-action", "?"), 200
        request_id = str(uuid.uuid4()).upper()
        fault: Fault | None = None
        content_type = "application/json;charset=utf-8"
        try:
            action = cloud.authenticate("POST", self.path, headers, body)
            fault = cloud.fault_for(action)
            if fault is not None and fault.delay_s:
                time.sleep(fault.delay_s)
            if fault is not None and fault.code:
                raise ApiFault(fault.code, status=fault.status)
            response: Any = getattr(cloud, f"_{action}")(params)
            answered = "ok"
            if fault is not None and fault.reshape is not None:
                response, answered = fault.reshape(response), "reshaped"
        except ApiFault as exc:
            fault = None
            status, answered = exc.status, exc.code
            response = {"HostId": headers.get("host", ""), "Code": exc.code, "Message": exc.message,
                        "Recommend": f"https://api.aliyun.com/troubleshoot?q={exc.code}&product=Ecs"
                                     f"&requestId={request_id}"}
            if exc.detail is not None:
                response["AccessDeniedDetail"] = exc.detail
        with cloud.lock:
            cloud.calls.append(Call(action, params, answered))
        document = {"RequestId": request_id, **response} if isinstance(response, dict) else response
        data = json.dumps(document).encode("utf-8")
        if fault is not None and (fault.body is not None or fault.status is not None):
            status, content_type = fault.status or 200, fault.content_type
            data = fault.body if fault.body is not None else data
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cloud: FakeAlibabaCloud


@contextmanager
def serve(cloud: FakeAlibabaCloud) -> Iterator[str]:
    """Serve `cloud` on 127.0.0.1 (a free port) in a thread; yields the endpoint URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.cloud = cloud
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fake-alibabacloud", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
