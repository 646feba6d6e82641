"""What both clouds' direct API clients (alicloud/sdk.py, tencentcloud/sdk.py) do the same way.

- `Credentials`: one key pair (+ token) and where it came from; the values never show in a repr and
  `values()` names each one for scrubbing.
- `CloudApi`: one region of a cloud's API: its constructor, `scrub`, the bounded retry loop of
  calls that change nothing (`RetryPolicy`: exponential backoff with full jitter) and the error
  text every failed call gets (`error`). Each cloud's sdk.py keeps its SDK calls, its error-code
  tables and `describe_error`.
- `loopback_endpoint`: the rules of the test-only endpoint override: plain http on loopback, any
  other host refused, so no setting can send signed requests anywhere but the cloud or this machine.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from toolkit.errors import ProviderError, UsageError
from toolkit.secrets import redact

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Per request. Describe calls answer in well under a second; 30 s means the network is broken.
DEFAULT_TIMEOUT_S = 30.0

T = TypeVar("T")


@dataclass(frozen=True)
class Credentials:
    """A key pair and its token; LABELS name the three values in scrubbed text (each cloud's words)."""

    LABELS: ClassVar[tuple[str, str, str]] = ("KeyId", "Secret", "Token")

    key_id: str = field(repr=False)
    secret: str = field(repr=False)
    token: str | None = field(default=None, repr=False)
    source: str = ""  # where they came from, for messages (never the values)

    def values(self) -> dict[str, str]:
        """{what it is: value}, for scrubbing text of them."""
        key_label, secret_label, token_label = self.LABELS
        found = {key_label: self.key_id, secret_label: self.secret}
        if self.token:
            found[token_label] = self.token
        return found


def loopback_endpoint(name: str, env: Mapping[str, str] | None = None, *,
                      proxy_envs: Sequence[str] = (), sdk: str = "the SDK") -> str | None:
    """`host:port` of the test-only endpoint override in variable `name`, or None. Loopback plain
    http only; with `proxy_envs` (the variables an SDK takes a proxy from whatever the host), none
    of them may be set either: `sdk` would send the signed test requests through that proxy."""
    env = os.environ if env is None else env
    value = env.get(name)
    if not value:
        return None
    parts = urlsplit(value)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS or port is None or parts.path not in ("", "/"):
        raise UsageError(f"{name}={value!r} is not a loopback test endpoint",
                         hint=f"{name} is for gpuctl's tests only (http://127.0.0.1:<port>); unset it")
    proxies = [proxy for proxy in proxy_envs if env.get(proxy) or os.environ.get(proxy)]
    if proxies:
        raise UsageError(f"{name} is set together with {', '.join(proxies)}: {sdk} would send "
                         "the test requests through that proxy",
                         hint=f"unset {' and '.join(proxies)} for the tests")
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    return f"{host}:{port}"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter: try n waits uniform(0, min(cap, base * 2**n))."""

    tries: int = 5
    base_s: float = 1.0
    cap_s: float = 20.0

    def delay(self, attempt: int, rand: random.Random) -> float:
        return rand.uniform(0.0, min(self.cap_s, self.base_s * 2**attempt))


DEFAULT_RETRY = RetryPolicy()


class ApiError(ProviderError):
    """A cloud API error, its text made for the user; `code` and `request_id` are the API's, for
    callers that branch on them."""

    def __init__(self, message: str, *, code: str, request_id: str | None = None, api_message: str = "",
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = code
        self.request_id = request_id
        self.api_message = api_message  # the API's own Message, scrubbed


@dataclass(frozen=True)
class Failure:
    """One try that got an error code instead of an answer."""

    code: str
    message: str
    request_id: str | None = None


class CloudApi:
    """One region of a cloud's API: retries and error text; subclasses make the SDK calls."""

    ERROR: ClassVar[type[ApiError]] = ApiError
    # Codes of a request that got no answer (the error text adds the timeout), and the prefixes of
    # codes worth another try besides them.
    NETWORK_CODES: ClassVar[frozenset[str]] = frozenset()
    RETRIED_PREFIXES: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        region: str,
        credentials: Credentials,
        *,
        endpoint: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
        rand: random.Random | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.region = region
        self.credentials = credentials
        self.endpoint = endpoint  # host:port of the test endpoint; None: the cloud's own endpoints
        self.timeout_s = timeout_s
        self.retry = retry
        self._sleep = sleep
        self._rand = rand or random.Random()
        self._env = env
        self._clients: dict[str, Any] = {}  # the SDK's clients, per service, made on first use

    def scrub(self, text: str) -> str:
        """`text` without any credential: the environment's (secrets.redact) and the ones in use."""
        text = redact(text, self._env)
        for name, value in sorted(self.credentials.values().items(), key=lambda item: -len(item[1])):
            if value:
                text = text.replace(value, f"<{name}>")
        return text

    def retryable(self, code: str) -> bool:
        return code in self.NETWORK_CODES or code.startswith(self.RETRIED_PREFIXES)

    def retried(self, attempt: Callable[[], T | Failure], *, action: str, safe: bool,
                context: Mapping[str, str] | None = None) -> T:
        """The answer of `attempt`, tried again after a retryable failure while the retry policy
        allows and only when the call is `safe` (changes nothing: a retried create could buy twice).
        Raises the last failure as an ApiError (scrubbed)."""
        tries = self.retry.tries if safe else 1
        for n in range(tries):
            outcome = attempt()
            if not isinstance(outcome, Failure):
                return outcome
            if self.retryable(outcome.code) and n + 1 < tries:
                self._sleep(self.retry.delay(n, self._rand))
                continue
            raise self.error(outcome.code, outcome.message, outcome.request_id, action=action, tries=n + 1,
                             context=context)
        raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover

    def describe(self, code: str, message: str, context: Mapping[str, str]) -> tuple[str, str | None]:
        """(what went wrong, what to do): each cloud's describe_error."""
        raise NotImplementedError

    def error(self, code: str, message: str, request_id: str | None, *, action: str, tries: int = 1,
              context: Mapping[str, str] | None = None) -> ApiError:
        message = self.scrub(message)
        what, hint = self.describe(code, message, {"action": action, **(context or {})})
        if code in self.NETWORK_CODES:
            what += f" (timeout {self.timeout_s:g}s per try)"
        if tries > 1:
            what += f" after {tries} tries"
        if request_id:
            what += f" [RequestId {request_id}]"
        return self.ERROR(self.scrub(what), code=code, request_id=request_id, api_message=message, hint=hint)
