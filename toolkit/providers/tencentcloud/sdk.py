"""What gpuctl asks Tencent Cloud directly, outside Pulumi: one region's API, bounded retries, clear errors.

Pulumi's tencentcloud provider creates and deletes; a few questions it cannot answer go through the
official SDK (`tencentcloud-sdk-python-cvm` / `-vpc`): is this instance type sold in that zone right
now (preflight.py), is anything tagged with the cluster still there after `down` (leftovers.py).

- Credentials, in the order the Pulumi provider reads them: `TENCENTCLOUD_SECRET_ID` /
  `TENCENTCLOUD_SECRET_KEY` (+ `TENCENTCLOUD_SECURITY_TOKEN`), else the tccli profile named by
  `TENCENTCLOUD_PROFILE` (default `default`) in `TENCENTCLOUD_SHARED_CREDENTIALS_DIR` (default
  `~/.tccli`), file `<profile>.credential` (JSON: secretId, secretKey, token). gpuctl only reads
  them; no credential is written, logged or put in an error (`scrub`).
- Retries: `RequestLimitExceeded*`, `InternalError*`, network failures (timeouts, resets), HTTP
  5xx/429 and answers that are not the API's are retried with exponential backoff and full
  jitter, a bounded number of tries within the command's budget (`cloud_api.Budget`), and only
  for calls that change nothing (Describe*, or DryRun): a retried RunInstances could buy twice.
- Answers: the SDK raises bare `ValueError`/`KeyError`/`TypeError` from inside `call_json` for a
  body that is not JSON, `null`, or lacks `Response` (abstract_client.py `_check_error`,
  `call_json`), and `ServerNetworkError` with only the body for any HTTP status but 200
  (`_check_status`): gpuctl turns the first into `cloud_api.BAD_ANSWER_CODE` and replaces the
  second so that the error says the status (`HTTP502`), the region and the action.
- Errors: every `TencentCloudSDKException` becomes a `ProviderError` that says what to do
  (`describe_error`): AuthFailure.* -> credentials / CAM; ResourcesSoldOut.* and
  ResourceInsufficient.* -> zone and type; LimitExceeded.* -> which quota; InvalidParameterValue ->
  which parameter.
- `GPUCTL_TENCENTCLOUD_ENDPOINT` is for tests only: it points the SDK at the fake API in
  tests/fake_cloud (plain http on loopback); any other host is refused, so no setting can send
  signed requests and a security token anywhere but Tencent Cloud or this machine.

The constructor, scrubbing, retry loop and error text are `toolkit.providers.cloud_api`'s, shared
with Alibaba Cloud. The SDK is imported inside functions: importing this module costs nothing.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolkit.errors import MissingToolError
from toolkit.files import FileError, expand_user, read_text_bounded, user_home
from toolkit.providers import cloud_api
from toolkit.providers.cloud_api import Budget, CloudApi, Failure, Page, bad_answer, http_failure, listed, whole
from toolkit.providers.cloud_api import RetryPolicy as RetryPolicy  # callers pass one to connect

if TYPE_CHECKING:
    from tencentcloud.common.abstract_client import AbstractClient

Service = Literal["cvm", "vpc"]

SECRET_ID_ENV = "TENCENTCLOUD_SECRET_ID"
SECRET_KEY_ENV = "TENCENTCLOUD_SECRET_KEY"
TOKEN_ENV = "TENCENTCLOUD_SECURITY_TOKEN"
# The tccli profile the Pulumi provider (and terraform-provider-tencentcloud) reads when no key is
# in the environment: `<dir>/<profile>.credential`, dir ~/.tccli by default.
PROFILE_ENV = "TENCENTCLOUD_PROFILE"
SHARED_CREDENTIALS_DIR_ENV = "TENCENTCLOUD_SHARED_CREDENTIALS_DIR"
DEFAULT_PROFILE = "default"
PROFILE_BYTES = 64 * 1024
# Test-only: http://127.0.0.1:<port> of tests/fake_cloud's fake API. Refused for any other host.
ENDPOINT_ENV = "GPUCTL_TENCENTCLOUD_ENDPOINT"

# Error codes worth another try: the frequency limit (20 requests/s per action for most CVM
# actions), the API's own transient failure, and the SDK's codes for a network failure (a timeout
# or reset: ClientNetworkError; an HTTP status other than 200: ServerNetworkError).
RETRIED_PREFIXES = ("RequestLimitExceeded", "InternalError")
NETWORK_CODES = frozenset({"ClientNetworkError", "ServerNetworkError"})
# Page size of Describe* calls: the documented maximum of Limit for CVM and VPC.
PAGE_SIZE = 100


@dataclass(frozen=True)
class Credentials(cloud_api.Credentials):
    """A SecretId/SecretKey pair (+ token); `source` is the variable or tccli profile it came from."""

    LABELS = (SECRET_ID_ENV, SECRET_KEY_ENV, TOKEN_ENV)

    source: str = SECRET_ID_ENV

    @property
    def secret_id(self) -> str:
        return self.key_id

    @property
    def secret_key(self) -> str:
        return self.secret


def load_credentials(env: Mapping[str, str] | None = None, home: Path | None = None) -> Credentials:
    """The credentials the Pulumi provider would use: the environment's key pair, else the tccli profile."""
    env = os.environ if env is None else env
    secret_id, secret_key = env.get(SECRET_ID_ENV, "").strip(), env.get(SECRET_KEY_ENV, "").strip()
    if secret_id and secret_key:
        return Credentials(secret_id, secret_key, env.get(TOKEN_ENV) or None, source=SECRET_ID_ENV)
    if secret_id or secret_key:
        missing = SECRET_KEY_ENV if secret_id else SECRET_ID_ENV
        raise MissingToolError(f"Tencent Cloud credentials are half set: {missing} is empty",
                               hint=f"export both {SECRET_ID_ENV} and {SECRET_KEY_ENV}, "
                                    "or neither and use a tccli profile", credentials=True)
    profile = env.get(PROFILE_ENV) or DEFAULT_PROFILE
    folder = expand_user(env[SHARED_CREDENTIALS_DIR_ENV], where=SHARED_CREDENTIALS_DIR_ENV) \
        if env.get(SHARED_CREDENTIALS_DIR_ENV) else (home or user_home()) / ".tccli"
    path = folder / f"{profile}.credential"
    hint = (f"export {SECRET_ID_ENV} and {SECRET_KEY_ENV} (a CAM sub-account key), or run `tccli configure` "
            f"(profile {profile}, read from {folder})")
    if not os.path.lexists(path):
        raise MissingToolError(f"no Tencent Cloud credentials: {SECRET_ID_ENV} is not set and {path} does not exist",
                               hint=hint, credentials=True)
    try:
        # Bounded, and never a FIFO that would block: a profile is a few hundred bytes.
        data = json.loads(read_text_bounded(path, limit=PROFILE_BYTES, what="tccli profile"))
    except FileError as exc:
        raise MissingToolError(f"cannot read the tccli profile {exc.message}", hint=hint, credentials=True) from None
    except (ValueError, RecursionError) as exc:
        # The exception names the file and what is wrong with it, never its content.
        raise MissingToolError(f"cannot read the tccli profile {path}: {type(exc).__name__}", hint=hint,
                               credentials=True) from None
    if not isinstance(data, Mapping):
        raise MissingToolError(f"the tccli profile {path} is not a JSON object", hint=hint, credentials=True)
    secret_id, secret_key = (str(data.get(key) or "").strip() for key in ("secretId", "secretKey"))
    if not (secret_id and secret_key):
        raise MissingToolError(f"the tccli profile {path} has no secretId/secretKey", hint=hint, credentials=True)
    token = str(data.get("token") or "").strip() or None
    return Credentials(secret_id, secret_key, token, source=str(path))


def override_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """`host:port` of the test-only endpoint override, or None. Loopback plain http only."""
    return cloud_api.loopback_endpoint(ENDPOINT_ENV, env)


def changes_nothing(action: str, params: Mapping[str, Any]) -> bool:
    """Safe to send twice: a Describe*, an InquiryPrice* (a price question), or a call that only checks (DryRun)."""
    return action.startswith(("Describe", "InquiryPrice")) or params.get("DryRun") is True


# --- Error text -------------------------------------------------------------------------------

# Quotas named by LimitExceeded.* codes gpuctl can meet (CVM error codes, errorcodes.py of the SDK).
QUOTAS = {
    "LimitExceeded.InstanceQuota": "the zone's instance quota for this billing mode",
    "LimitExceeded.CvmInstanceQuota": "the account's CVM instance quota",
    "LimitExceeded.SpotQuota": "the spot instance quota (vCPU)",
    "LimitExceeded.UserSpotQuota": "the spot instance quota (vCPU)",
    "LimitExceeded.PrepayQuota": "the monthly (prepaid) instance quota",
    "LimitExceeded.HpcClusterQuota": "the number of HPC clusters",
    "LimitExceeded.VpcLimit": "the number of VPCs in the region",
    "LimitExceeded.SecurityGroupQuota": "the number of security groups",
}
QUOTA_CONSOLE = "https://console.cloud.tencent.com/cvm/quota"
_PARAMETER = re.compile(r"`([A-Za-z][A-Za-z0-9.]*)`|\b(?:parameter|参数)\s*[`'\"]?([A-Z][A-Za-z0-9.]*)")


def describe_error(code: str, message: str, context: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(what went wrong, what to do) for an API error code; `context` names the zone, instance_type,
    action ... the call was about, and `sold_in` the zones where the type is sold, when known."""
    context = context or {}
    zone, itype = context.get("zone"), context.get("instance_type")
    where = " ".join(part for part in (f"{itype}" if itype else "", f"in {zone}" if zone else "") if part)
    action = context.get("action", "the API call")
    if code.startswith("AuthFailure") or code == "UnauthorizedOperation" or code.startswith("UnauthorizedOperation."):
        if code in ("AuthFailure.SecretIdNotFound", "AuthFailure.InvalidSecretId"):
            what = "the SecretId is not a valid, enabled Tencent Cloud API key"
        elif code == "AuthFailure.SignatureFailure":
            what = "the signature does not match: the SecretKey does not belong to the SecretId"
        elif code == "AuthFailure.SignatureExpire":
            what = "the request's timestamp is more than 5 minutes off: this machine's clock is wrong"
        elif code == "AuthFailure.TokenFailure":
            what = "the security token is invalid or expired"
        else:
            what = f"the key may not call {action} (CAM)"
        return (f"Tencent Cloud refused the credentials ({code}): {what}",
                f"check {SECRET_ID_ENV}/{SECRET_KEY_ENV} (or the tccli profile) and that the CAM user's policy "
                f"allows {action}; keys: https://console.cloud.tencent.com/cam/capi")
    if code.startswith(("ResourcesSoldOut", "ResourceInsufficient")):
        sold_in = context.get("sold_in")
        elsewhere = f"; sold now in: {sold_in}" if sold_in else ""
        return (f"{where or 'the requested resource'} is sold out ({code}){elsewhere}",
                "choose another zone or instance type in the spec, or try again later")
    if code.startswith("LimitExceeded"):
        quota = QUOTAS.get(code, f"the quota named by {code}")
        return (f"{action} exceeds {quota} ({code}): {message}",
                f"raise it at {QUOTA_CONSOLE} (or with a ticket), or ask for fewer nodes")
    if code.startswith(("InvalidParameterValue", "InvalidParameter", "MissingParameter")):
        match = _PARAMETER.search(message)
        parameter = next((g for g in match.groups() if g), None) if match else None
        named = f" parameter {parameter}" if parameter else " a parameter"
        return (f"{action}:{named} was refused ({code}): {message}",
                "check the spec value that sets it (instance type, image, zone, disk category)")
    if code.startswith("RequestLimitExceeded"):
        return (f"{action} was throttled by Tencent Cloud ({code}) on every try",
                "wait a minute and run the command again; another tool on this account may be calling the API hard")
    if code in NETWORK_CODES:
        return (f"{action}: Tencent Cloud did not answer ({code}): {message}",
                "check the network and any HTTPS_PROXY setting, then run the command again")
    return f"{action} failed ({code}): {message}", None


# --- The API ------------------------------------------------------------------------------------


class ApiError(cloud_api.ApiError):
    """A Tencent Cloud API error, its text made for the user; `code` is the API's, for callers that
    branch on it (preflight treats DryRunOperation as a pass)."""


class _HttpStatus(Exception):  # noqa: N818 -- an answer's status, carried out of the SDK
    def __init__(self, status: int, reason: str, body: bytes) -> None:
        super().__init__(status)
        self.status, self.reason, self.body = status, reason, body


def _check_status(response: Any) -> None:
    """The SDK's `_check_status` (any status but 200 is an error), with the status kept: the SDK's
    own raises ServerNetworkError with the body only."""
    if response.status_code != 200:
        raise _HttpStatus(int(response.status_code), str(response.reason or ""), bytes(response.content or b""))


class TencentApi(CloudApi):
    """One region of the Tencent Cloud API for gpuctl: signed calls through the SDK, retries, errors."""

    ERROR = ApiError
    CLOUD = "Tencent Cloud"
    NETWORK_CODES = NETWORK_CODES
    RETRIED_PREFIXES = RETRIED_PREFIXES

    def client(self, service: Service) -> AbstractClient:
        if service not in self._clients:
            self._clients[service] = self._make_client(service)
        made: AbstractClient = self._clients[service]
        return made

    def _make_client(self, service: Service) -> AbstractClient:
        try:
            from tencentcloud.common import credential
            from tencentcloud.common.profile.client_profile import ClientProfile
            from tencentcloud.common.profile.http_profile import HttpProfile
        except ImportError:
            raise MissingToolError(
                "the Tencent Cloud SDK is not installed",
                hint="pip install -e . (tencentcloud-sdk-python-cvm/-vpc are gpuctl dependencies)",
            ) from None
        http = HttpProfile(reqTimeout=self.timeout_s)
        if self.endpoint is not None:
            http.protocol = http.scheme = "http"
            http.endpoint = self.endpoint
        # English messages: they end up in gpuctl's errors. No SDK retryer: `call` retries itself.
        profile = ClientProfile(httpProfile=http, language="en-US")
        cred = credential.Credential(self.credentials.key_id, self.credentials.secret, self.credentials.token)
        made: AbstractClient
        if service == "cvm":
            from tencentcloud.cvm.v20170312.cvm_client import CvmClient
            made = CvmClient(cred, self.region, profile)
        else:
            from tencentcloud.vpc.v20170312.vpc_client import VpcClient
            made = VpcClient(cred, self.region, profile)
        if self.endpoint is not None:
            # The test endpoint is on this machine: no proxy from the environment may carry it away.
            made.request.conn.proxy = None
            made.request.conn._session.trust_env = False
        made._check_status = _check_status  # the SDK keeps no status: abstract_client.py _check_status
        return made

    def call(self, service: Service, action: str, params: Mapping[str, Any],
             context: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The `Response` object of one action; raises ApiError (scrubbed) when it fails."""
        from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

        client = self.client(service)

        def attempt() -> dict[str, Any] | Failure:
            # Each try gets what is left of the budget at most (the SDK's session reads this timeout).
            client.request.conn.timeout = self.try_timeout()
            try:
                answer = client.call_json(action, dict(params))
            except TencentCloudSDKException as exc:
                return Failure(str(exc.get_code() or "Unknown"), str(exc.get_message() or ""), exc.get_request_id())
            except _HttpStatus as status:
                return http_failure(status.status, status.reason, status.body)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                # Raised by the SDK's own reading of the body: not JSON, `null`, no Response, `[[[[...`
                return bad_answer(f"the SDK could not read it ({type(exc).__name__}: {str(exc)[:120]})")
            response = answer.get("Response") if isinstance(answer, Mapping) else None
            if not isinstance(response, dict):
                return bad_answer("no Response object in it", json.dumps(answer, default=repr)[:1000])
            return response

        return self.retried(attempt, action=action, safe=changes_nothing(action, params),
                            context={"region": self.region, **(context or {})})

    def describe(self, code: str, message: str, context: Mapping[str, str]) -> tuple[str, str | None]:
        return describe_error(code, message, context)

    def pages(self, service: Service, action: str, params: Mapping[str, Any], set_key: str,
              *, text_paging: bool = False) -> list[dict[str, Any]]:
        """Every item of a paged Describe* (Offset/Limit, at most PAGE_SIZE a page; VPC's are
        strings: `text_paging`), through `collect`'s caps. The next page is asked only after a full
        one and while TotalCount (when it is a sane integer) says more are left. A page without
        its `set_key` array is a failure (BAD_ANSWER_CODE), not an empty page."""

        def fetch(cursor: Any) -> Page:
            offset = int(cursor or 0)
            paging = (str(offset), str(PAGE_SIZE)) if text_paging else (offset, PAGE_SIZE)
            response = self.call(service, action, {**params, "Offset": paging[0], "Limit": paging[1]})
            page = [item for item in self.items(response.get(set_key), set_key, action=action)
                    if isinstance(item, dict)]
            total = whole(response.get("TotalCount"))
            done = len(page) < PAGE_SIZE or (total is not None and offset + len(page) >= total)
            return Page(page, None if done else offset + len(page))

        return self.collect(fetch, action=action, context={"region": self.region})


def connect(region: str, *, env: Mapping[str, str] | None = None, home: Path | None = None,
            timeout_s: float | None = None, retry: RetryPolicy | None = None,
            sleep: Callable[[float], None] = time.sleep, budget: Budget | None = None) -> TencentApi:
    """The API of `region` with the credentials the Pulumi provider would use; `budget`: the
    command's (a new one of LIMITS.deadline_s when not given)."""
    return TencentApi(region, load_credentials(env, home), endpoint=override_endpoint(env), timeout_s=timeout_s,
                      retry=retry, sleep=sleep, env=env, budget=budget)


def filters(**named: str | Sequence[str]) -> list[dict[str, Any]]:
    """API Filters from keyword arguments: zone="ap-shanghai-5" -> [{"Name": "zone", "Values": [...]}].
    Underscores become dashes (instance_type -> instance-type)."""
    return [{"Name": name.replace("_", "-"), "Values": [value] if isinstance(value, str) else list(value)}
            for name, value in named.items()]


def tag_filter(key: str, value: str) -> dict[str, Any]:
    """The `tag:<key>` filter every Describe* gpuctl uses accepts (instances, VPC, subnets, security
    groups, key pairs, HPC clusters)."""
    return {"Name": f"tag:{key}", "Values": [value]}


def tags_of(item: Mapping[str, Any]) -> dict[str, str]:
    """An item's tags as {key: value}: CVM calls them Tags, VPC TagSet, both [{Key, Value}]."""
    found: dict[str, str] = {}
    for tag in listed(item.get("Tags") or item.get("TagSet")):
        if isinstance(tag, Mapping) and tag.get("Key") is not None:
            found[str(tag["Key"])] = str(tag.get("Value") or "")
    return found
