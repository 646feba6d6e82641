"""What gpuctl asks Alibaba Cloud's ECS API directly, outside Pulumi: one region, bounded retries, clear errors.

Pulumi's alicloud provider creates and deletes; questions it cannot answer (today: what an instance
type costs, `gpuctl prices refresh`) go through Alibaba's official ECS SDK,
`alibabacloud-ecs20140526` (Darabonba/Tea based). Its OpenAPI core signs every request with
ACS3-HMAC-SHA256 (signature method V3: `alibabacloud_tea_openapi.utils.Utils.get_authorization`).

- Credentials, only from the environment, in the order the Pulumi provider (and the driver's
  `CREDENTIAL_PAIRS`) reads them: `ALICLOUD_ACCESS_KEY` / `ALICLOUD_SECRET_KEY`
  (+ `ALICLOUD_SECURITY_TOKEN`), else `ALIBABA_CLOUD_ACCESS_KEY_ID` / `ALIBABA_CLOUD_ACCESS_KEY_SECRET`
  (+ `ALIBABA_CLOUD_SECURITY_TOKEN`). An aliyun CLI profile is not read here: one explicit key
  pair, never a credential chain that might find a key the user did not mean. gpuctl only reads
  them; no credential is written, logged or put in an error (`scrub`).
- Retries: `Throttling*`, `ServiceUnavailable`, `InternalError`, `UnknownError`, network
  failures, HTTP 5xx/429 and answers that are not the API's are retried with exponential backoff
  and full jitter, a bounded number of tries within the command's budget (`cloud_api.Budget`),
  and only for calls that change nothing (Describe*). The SDK's own retryer stays off (no
  `retry_options`): one place decides.
- Answers: the OpenAPI core raises `ClientException`/`ServerException` with the HTTP status for
  an error answer in JSON (alibabacloud_tea_openapi/client.py `do_request`), and wraps anything
  else in `UnretryableException`: a body that is not JSON (`RuntimeError` "Failed to parse the
  value as json format", darabonba/utils/stream.py), a JSON error body that is not an object. The
  first keeps the API's code, or `HTTP<status>` when the body had none; the others become
  `cloud_api.BAD_ANSWER_CODE` with the start of the body. That core does not keep the HTTP status
  of a body that is not JSON, so such an error quotes the body instead of a status.
- Errors: every SDK error becomes an `ApiError` (a ProviderError, exit 6) with the API's code and
  request id and what to do (`describe_error`); the SDK's own message is not used as is (it
  repeats the request id and may echo the string the server signed).
- `GPUCTL_ALICLOUD_ENDPOINT` is for tests only, with the rules of `GPUCTL_TENCENTCLOUD_ENDPOINT`
  (`cloud_api.loopback_endpoint`): plain http on loopback, any other host refused. The SDK takes
  its proxy from HTTP_PROXY / http_proxy whatever the host, so with the override set a proxy
  variable is refused too: signed requests never leave this machine.

The constructor, scrubbing, retry loop and error text are `toolkit.providers.cloud_api`'s, shared
with Tencent Cloud. The SDK is imported inside functions: importing this module costs nothing.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolkit import hints
from toolkit.errors import MissingToolError
from toolkit.providers import cloud_api
from toolkit.providers.cloud_api import Budget, CloudApi, Failure, bad_answer, http_failure
from toolkit.providers.cloud_api import RetryPolicy as RetryPolicy  # callers pass one to connect

if TYPE_CHECKING:
    from alibabacloud_ecs20140526.client import Client as EcsClient

# Key pairs, in the order they are read (the first complete pair wins), with their token.
CREDENTIAL_SETS: tuple[tuple[str, str, str], ...] = (
    ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN"),
    ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN"),
)
# Test-only: http://127.0.0.1:<port> of tests/fake_cloud/alibaba.py. Refused for any other host.
ENDPOINT_ENV = "GPUCTL_ALICLOUD_ENDPOINT"
# The variables darabonba reads for a proxy (darabonba/core.py do_action), whatever the host.
PROXY_ENVS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy")
API_VERSION = "2014-05-26"

# Codes worth another try: flow control (ECS answers `Throttling` / `Throttling.User` with HTTP 403,
# API reference "Error codes"), the service's own transient failures, and gpuctl's code for a
# request that got no answer.
RETRIED_PREFIXES = ("Throttling", "ServiceUnavailable", "InternalError", "UnknownError")
NETWORK_CODE = "NetworkError"
# Codes that say the key itself is wrong: every later call would fail the same way.
AUTH_CODES = frozenset({
    "InvalidAccessKeyId.NotFound", "InvalidAccessKeyId", "InvalidAccessKeyId.Inactive",
    "SignatureDoesNotMatch", "IncompleteSignature", "InvalidSecurityToken.Expired",
    "InvalidSecurityToken.Malformed", "InvalidSecurityToken.MismatchWithAccessKey",
    "InvalidTimeStamp.Expired", "SignatureNonceUsed", "Forbidden.RAM", "Forbidden", "NoPermission",
    "InvalidCredentials",
})
# Codes that say this type has no price here (not sold in the region, retired): a row, not a failure.
NOT_SOLD_CODES = frozenset({
    "InvalidInstanceType.NotFound", "InvalidInstanceType.ValueNotSupported", "InstanceType.Offline",
    "PriceNotFound", "InvalidZoneId.NotFound", "Zone.NotOnSale",
})
RAM_CONSOLE = "https://ram.console.aliyun.com/users"


@dataclass(frozen=True)
class Credentials(cloud_api.Credentials):
    """An AccessKey pair (+ security token); `source` is the variable it came from."""

    LABELS = ("AccessKeyId", "AccessKeySecret", "SecurityToken")

    source: str = "ALICLOUD_ACCESS_KEY"

    @property
    def access_key_id(self) -> str:
        return self.key_id

    @property
    def access_key_secret(self) -> str:
        return self.secret


def credentials_hint() -> str:
    names = " / ".join(f"{key} and {secret}" for key, secret, _ in CREDENTIAL_SETS)
    return (f"export {names} (a RAM user's AccessKey allowed ecs:DescribePrice and "
            f"ecs:DescribeSpotPriceHistory); keys: {RAM_CONSOLE}")


def load_credentials(env: Mapping[str, str] | None = None) -> Credentials:
    """The first complete key pair of the environment; MissingToolError (exit 7) naming the variables."""
    env = os.environ if env is None else env
    for key_env, secret_env, token_env in CREDENTIAL_SETS:
        key, secret = env.get(key_env, "").strip(), env.get(secret_env, "").strip()
        if key and secret:
            return Credentials(key, secret, env.get(token_env, "").strip() or None, source=key_env)
        if key or secret:
            missing = secret_env if key else key_env
            raise MissingToolError(f"Alibaba Cloud credentials are half set: {missing} is empty",
                                   hint=f"export both {key_env} and {secret_env}", credentials=True)
    names = ", ".join(f"{key}/{secret}" for key, secret, _ in CREDENTIAL_SETS)
    raise MissingToolError(f"no Alibaba Cloud credentials in the environment ({names} are not set)",
                           hint=credentials_hint(), credentials=True)


def override_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """`host:port` of the test-only endpoint override, or None. Loopback plain http only, and no
    proxy variable set (the SDK would send the signed requests through it)."""
    return cloud_api.loopback_endpoint(ENDPOINT_ENV, env, proxy_envs=PROXY_ENVS, sdk="the Alibaba SDK")


def changes_nothing(action: str) -> bool:
    return action.startswith("Describe")


# --- Error text -------------------------------------------------------------------------------


def describe_error(code: str, message: str, context: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(what went wrong, what to do) for an ECS API error code; `context` names the action,
    instance_type, region ... the call was about."""
    context = context or {}
    action = context.get("action", "the API call")
    itype, region = context.get("instance_type"), context.get("region")
    if code in AUTH_CODES:
        if code.startswith("InvalidAccessKeyId"):
            what = "the AccessKey ID is not a valid, enabled Alibaba Cloud key"
        elif code == "SignatureDoesNotMatch":
            what = "the signature does not match: the AccessKey secret does not belong to the AccessKey ID"
        elif code == "IncompleteSignature":
            what = "the request's signature is incomplete (a proxy may have changed the request)"
        elif code.startswith("InvalidSecurityToken"):
            what = "the security token is invalid or expired"
        elif code in ("InvalidTimeStamp.Expired", "SignatureNonceUsed"):
            what = "the request's time is off or was replayed: check this machine's clock"
        elif code == "InvalidCredentials":
            what = "no usable key was given to the SDK"
        else:
            what = f"the RAM user may not call ecs:{action}"
        return (f"Alibaba Cloud refused the credentials ({code}): {what}",
                f"check the key ({credentials_hint()})")
    if code in NOT_SOLD_CODES:
        where = " ".join(part for part in (itype or "", f"in {region}" if region else "") if part)
        return (f"{where or 'the instance type'} has no price ({code}): {message}",
                f"the type may not be sold in that region; `{hints.command('catalog', 'alicloud')}` lists the types")
    if code.startswith("Throttling"):
        return (f"{action} was throttled by Alibaba Cloud ({code}) on every try",
                "wait a minute and run the command again; another tool on this account may be calling the API hard")
    if code == NETWORK_CODE:
        return (f"{action}: Alibaba Cloud did not answer: {message}",
                "check the network and any HTTPS_PROXY setting, then run the command again")
    return f"{action} failed ({code}): {message}", None


# --- The API ------------------------------------------------------------------------------------


class ApiError(cloud_api.ApiError):
    """An ECS API error, its text made for the user; `code` and `request_id` are the API's."""

    @property
    def auth(self) -> bool:
        return self.code in AUTH_CODES

    @property
    def not_sold(self) -> bool:
        return self.code in NOT_SOLD_CODES


def _snake(action: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action).lower()


class AlibabaApi(CloudApi):
    """One region of the ECS API for gpuctl: signed calls through the SDK, retries, errors."""

    ERROR = ApiError
    CLOUD = "Alibaba Cloud"
    NETWORK_CODES = frozenset({NETWORK_CODE})
    RETRIED_PREFIXES = RETRIED_PREFIXES

    def client(self) -> EcsClient:
        if "ecs" not in self._clients:
            self._clients["ecs"] = self._make_client()
        made: EcsClient = self._clients["ecs"]
        return made

    def _make_client(self) -> EcsClient:
        try:
            from alibabacloud_ecs20140526.client import Client
            from alibabacloud_tea_openapi.utils_models import Config
        except ImportError:
            raise MissingToolError("the Alibaba Cloud ECS SDK is not installed",
                                   hint="pip install -e . (alibabacloud-ecs20140526 is a gpuctl dependency)") from None
        config = Config(
            access_key_id=self.credentials.key_id,
            access_key_secret=self.credentials.secret,
            security_token=self.credentials.token,
            region_id=self.region,
            connect_timeout=int(self.timeout_s * 1000),
            read_timeout=int(self.timeout_s * 1000),
        )
        if self.endpoint is not None:
            config.endpoint = self.endpoint
            config.protocol = "http"
        return Client(config)

    def call(self, action: str, request: Any, context: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The response body of one action as a dict (the API's field names); `request` is the SDK's
        request model for it. Raises ApiError (scrubbed)."""
        from darabonba.exceptions import DaraException, RetryError, UnretryableException
        from darabonba.runtime import RuntimeOptions

        method = getattr(self.client(), f"{_snake(action)}_with_options")

        def attempt() -> dict[str, Any] | Failure:
            # Each try gets what is left of the budget at most.
            millis = int(self.try_timeout() * 1000)
            runtime = RuntimeOptions(read_timeout=millis, connect_timeout=millis)
            try:
                response = method(request, runtime)
            except UnretryableException as exc:
                inner = exc.inner_exception
                if isinstance(inner, RetryError | OSError):  # no answer: timeout, refused, reset
                    return Failure(NETWORK_CODE, type(inner).__name__)
                return _unreadable(inner)
            except DaraException as exc:
                return _api_failure(exc)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                # The SDK's models read a field of the wrong type (a string where a list belongs).
                return bad_answer(f"the SDK could not read it ({type(exc).__name__}: {str(exc)[:120]})")
            body = response.body.to_map() if response.body is not None else None
            if not isinstance(body, dict):
                return bad_answer("no response body in it")
            return body

        return self.retried(attempt, action=action, safe=changes_nothing(action), context=context)

    def describe(self, code: str, message: str, context: Mapping[str, str]) -> tuple[str, str | None]:
        return describe_error(code, message, {"region": self.region, **context})


# darabonba/utils/stream.py: RuntimeError(f'Failed to parse the value as json format, Value: "{val}".')
_NOT_JSON = re.compile(r'Failed to parse the value as json format, Value: "(?P<body>.*)"\.?$', re.DOTALL)


def _unreadable(inner: BaseException | None) -> Failure:
    """What the OpenAPI core could not read: a body that is not JSON (its status is not kept), or
    a JSON error body that is not an object."""
    match = _NOT_JSON.match(str(inner))
    if match:
        return bad_answer("not JSON (an HTTP error page or a proxy's answer? the SDK does not keep the status "
                          "of such an answer)", match["body"])
    return bad_answer(f"the SDK could not read it ({type(inner).__name__}: {str(inner)[:120]})")


def _api_failure(exc: Any) -> Failure:
    """An error answer in JSON: the API's code and message, or the HTTP status when it named no code."""
    data = exc.data if isinstance(exc.data, Mapping) else {}
    status = getattr(exc, "status_code", None)
    code = str(data.get("Code") or (exc.code if exc.code not in (None, "None", "") else "") or "")
    request_id = str(data.get("RequestId") or getattr(exc, "request_id", "") or "").removeprefix("None") or None
    if not code and isinstance(status, int):
        return http_failure(status, "", str(data.get("Message") or "") or None, request_id)
    message = str(data.get("Message") or exc.message or "")
    if isinstance(status, int) and status >= 500:
        message += f" (HTTP {status})"
    return Failure(code or "Unknown", message, request_id)


def connect(region: str, *, env: Mapping[str, str] | None = None, timeout_s: float | None = None,
            retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep,
            budget: Budget | None = None) -> AlibabaApi:
    """The ECS API of `region` with the environment's credentials; `budget`: the command's (a new
    one of LIMITS.deadline_s when not given)."""
    return AlibabaApi(region, load_credentials(env), endpoint=override_endpoint(env), timeout_s=timeout_s,
                      retry=retry, sleep=sleep, env=env, budget=budget)
