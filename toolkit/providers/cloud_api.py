from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from toolkit.errors import ProviderError, UsageError
from toolkit.secrets import redact
from toolkit.vocabulary import REGION_ID_PATTERN

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# A region id as both clouds write them (cn-wulanchabu, ap-shanghai-fsi, us-east-1); the spec's rule
# (toolkit/vocabulary.py, spec/models.py `_region_shape`). It matters beyond tidiness: Alibaba's SDK
# puts the region into the endpoint's host name (`ecs.<region>.aliyuncs.com`), so a region read from
# a damaged state file, a cache or an answer, like "x.example.com/", would send signed requests to
# another host.
REGION_ID = re.compile(REGION_ID_PATTERN)
# gpuctl's own codes for what went wrong without an API error code to say so.
DEADLINE_CODE = "gpuctl.DeadlineExceeded"  # the command's budget ran out before this call
PAGING_CODE = "gpuctl.PagingStopped"  # a list did not end within its caps, or went round in circles
BAD_ANSWER_CODE = "gpuctl.BadAnswer"  # an answer that is not the API's JSON object, or not of its shape
HTTP_CODE_PREFIX = "HTTP"  # "HTTP502": an HTTP error status whose body carried no API error code
# How much of an answer that is not the API's an error quotes (a proxy's HTML page can be long).
QUOTED_CHARS = 200

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


def check_region(region: object, where: str = "the region") -> str:
    """`region` when it is a region id (REGION_ID); a UsageError naming `where` it came from otherwise."""
    if isinstance(region, str) and REGION_ID.fullmatch(region):
        return region
    raise UsageError(f"{where} {ascii(region)[:80]} is not a region id such as cn-beijing or ap-shanghai; "
                     "gpuctl asks no API about it")


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


@dataclass(frozen=True)
class Limits:
    """The bounds of gpuctl's direct cloud calls. `LIMITS` below is what every call reads (at call
    time, so tests can put short ones in its place)."""

    # One try. Describe calls answer in well under a second; 30 s means the network is broken.
    timeout_s: float = 30.0
    retry: RetryPolicy = RetryPolicy()
    # One command, all its calls, waits and pages together. A reap of every region of both clouds
    # takes well under a minute, a price refresh of the catalog in one region about as long; ten
    # minutes is a broken API, and what is left is reported as not finished.
    deadline_s: float = 600.0
    # One list. ECS caps a one-tag DescribeInstances at 1,000 instances and both APIs page at 100;
    # 200 pages / 20,000 items is more than any account gpuctl serves, and far below what an
    # endless list would cost (a list that never ended ran 38,831 calls and 4.6 GB before).
    max_pages: int = 200
    max_items: int = 20_000


LIMITS = Limits()


class Budget:
    """One command's seconds for cloud calls: every try, every wait between tries, every page."""

    def __init__(self, seconds: float | None = None, *, clock: Callable[[], float] = time.monotonic,
                 of: Budget | None = None) -> None:
        self.seconds = LIMITS.deadline_s if seconds is None else seconds
        self._clock = clock
        self._deadline = clock() + self.seconds
        self.whole: Budget = of.whole if of is not None else self  # the command's own, for what messages say

    def remaining(self) -> float:
        return max(0.0, self._deadline - self._clock())

    @property
    def spent(self) -> bool:
        return self.remaining() <= 0.0

    def share(self, parts: int) -> Budget:
        """A budget of 1/`parts` of what is left, inside this one: one of `parts` regions still to ask
        gets its fair part, and what an earlier, faster region left over goes to the ones after it."""
        seconds = self.remaining() / max(1, parts)
        return Budget(seconds, clock=self._clock, of=self)


@dataclass(frozen=True)
class RegionGap:
    """A cloud or region a command could not search or finish, and why."""

    provider: str
    region: str  # "*" when the whole cloud could not be asked
    reason: str
    credentials: bool = False  # the cause is missing or refused credentials (exit 7)


def refused_credentials(error: BaseException) -> bool:
    """The error says the key itself is refused (every later call would fail the same way): the
    cloud's ApiError says so (`auth`), or its code is one of Tencent's AuthFailure/UnauthorizedOperation."""
    return bool(getattr(error, "auth", False)) or str(getattr(error, "code", "")).startswith(
        ("AuthFailure", "UnauthorizedOperation"))


class ApiError(ProviderError):
    """A cloud API error, its text made for the user; `code` and `request_id` are the API's (or
    gpuctl's own, above), for callers that branch on them."""

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


def http_failure(status: int, reason: str, body: bytes | str | None, request_id: str | None = None) -> Failure:
    """An HTTP error status whose answer named no API error code (a gateway's page, an empty body)."""
    return Failure(f"{HTTP_CODE_PREFIX}{status}", f"HTTP {status} {reason}".rstrip() + f"; {quoted(body)}",
                   request_id)


def bad_answer(what: str, body: bytes | str | None = None) -> Failure:
    """An answer that is not the API's: `what` says how (not JSON, not an object, a field of the wrong type)."""
    return Failure(BAD_ANSWER_CODE, what + (f"; {quoted(body)}" if body is not None else ""))


def quoted(body: bytes | str | None) -> str:
    """What an answer began with, for an error: at most QUOTED_CHARS characters, control characters shown."""
    if body is None or len(body) == 0:
        return "the body was empty"
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    head = ascii(text[:QUOTED_CHARS])
    return f"the body began {head}" + (f" ({len(body):,} bytes in all)" if len(text) > QUOTED_CHARS else "")


def listed(value: Any) -> list[Any]:
    """A field the API documents as an array: itself when it is one, else empty (a hostile or damaged
    answer's string or number is no list of items)."""
    return value if isinstance(value, list) else []


def mapping(value: Any) -> Mapping[str, Any]:
    """A field the API documents as an object: itself when it is one, else empty."""
    return value if isinstance(value, Mapping) else {}


def whole(value: Any, *, low: int = 0, high: int = 10**9) -> int | None:
    """A count the API documents as an integer (TotalCount): None when it is not one in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return None
    return value


@dataclass(frozen=True)
class Page:
    """One page of a list: its items and the cursor of the next (None: this was the last)."""

    items: list[dict[str, Any]]
    next: Hashable | None


class CloudApi:
    """One region of a cloud's API: retries, the pager and error text; subclasses make the SDK calls."""

    ERROR: ClassVar[type[ApiError]] = ApiError
    CLOUD: ClassVar[str] = "the cloud"
    # Codes of a request that got no answer (the error text adds the timeout), and the prefixes of
    # codes worth another try besides them.
    NETWORK_CODES: ClassVar[frozenset[str]] = frozenset()
    RETRIED_PREFIXES: ClassVar[tuple[str, ...]] = ()
    # An HTTP status worth another try: the server's own failure or its rate limit (RFC 9110 15.6,
    # RFC 6585 4); a 4xx other than 429 will answer the same again.
    RETRIED_HTTP: ClassVar[tuple[str, ...]] = (f"{HTTP_CODE_PREFIX}5", f"{HTTP_CODE_PREFIX}429")

    def __init__(
        self,
        region: str,
        credentials: Credentials,
        *,
        endpoint: str | None = None,
        timeout_s: float | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rand: random.Random | None = None,
        env: Mapping[str, str] | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.region = check_region(region)
        self.credentials = credentials
        self.endpoint = endpoint  # host:port of the test endpoint; None: the cloud's own endpoints
        self.timeout_s = LIMITS.timeout_s if timeout_s is None else timeout_s
        self.retry = LIMITS.retry if retry is None else retry
        self.budget = budget or Budget()
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
        return code in self.NETWORK_CODES or code == BAD_ANSWER_CODE or \
            code.startswith(self.RETRIED_PREFIXES + self.RETRIED_HTTP)

    def try_timeout(self) -> float:
        """The timeout of the next try: the per-try bound, or what is left of the budget when less
        (never under 0.1 s: an SDK reads 0 as "its own default")."""
        return max(0.1, min(self.timeout_s, self.budget.remaining()))

    def retried(self, attempt: Callable[[], T | Failure], *, action: str, safe: bool,
                context: Mapping[str, str] | None = None) -> T:
        """The answer of `attempt`, tried again after a retryable failure while the retry policy
        and the budget allow, and only when the call is `safe` (changes nothing: a retried create
        could buy twice). Raises the last failure as an ApiError (scrubbed); a call made after the
        budget ran out is not sent at all."""
        tries = self.retry.tries if safe else 1
        for n in range(tries):
            if self.budget.spent:
                raise self.deadline_error(action, context)
            bound = self.try_timeout()
            outcome = self._within(attempt, bound)
            if outcome is None:  # no whole answer in time: the budget is what bounds the command
                raise self.error(DEADLINE_CODE, f"no whole answer within {bound:.1f} s (the per-try "
                                 f"bound, or what was left of {self._budget_words()})",
                                 None, action=action, tries=n + 1, context=context)
            if not isinstance(outcome, Failure):
                return outcome
            if self.retryable(outcome.code) and n + 1 < tries:
                wait = self.retry.delay(n, self._rand)
                if wait < self.budget.remaining():
                    self._sleep(wait)
                    continue
                raise self.error(outcome.code, outcome.message, outcome.request_id, action=action, tries=n + 1,
                                 context=context, note=f"no time left in {self._budget_words()} for another try")
            raise self.error(outcome.code, outcome.message, outcome.request_id, action=action, tries=n + 1,
                             context=context)
        raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover

    @staticmethod
    def _within(attempt: Callable[[], T | Failure], seconds: float) -> T | Failure | None:
        """`attempt()`'s outcome, or None when it has not finished after `seconds` (+ a grace of 1 s).

        An SDK's timeout bounds each read of the socket, not the answer: a server that sends one byte
        a second never times out. So each try runs in a thread of its own, and the caller stops
        waiting at the bound; an abandoned try finishes or fails on its own (a daemon thread: it
        never keeps the command alive), and its outcome is never used.
        """
        box: list[T | Failure | BaseException] = []

        def run() -> None:
            try:
                box.append(attempt())
            except BaseException as exc:  # handed back to the caller's thread below
                box.append(exc)

        worker = threading.Thread(target=run, name="gpuctl-cloud-call", daemon=True)
        worker.start()
        worker.join(seconds + 1.0)
        if not box:
            return None
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def items(self, value: Any, where: str, *, action: str) -> list[Any]:
        """The array an answer documents at `where` (e.g. "InstanceSet"): an ApiError (BAD_ANSWER_CODE)
        when it is absent or not an array, so that a list that cannot be read is a failure that names
        its region, never an empty list."""
        if isinstance(value, list):
            return value
        shown = "absent" if value is None else f"a {type(value).__name__}, not an array"
        raise self.error(BAD_ANSWER_CODE, f"{where} is {shown}", None, action=action,
                         context={"region": self.region})

    def _budget_words(self) -> str:
        """The budget a message names: the command's, or a region's share of it."""
        whole = self.budget.whole
        if whole is self.budget:
            return f"the command's {whole.seconds:g} s budget"
        return f"this region's share ({self.budget.seconds:.2g} s) of the command's {whole.seconds:g} s budget"

    def deadline_error(self, action: str, context: Mapping[str, str] | None = None) -> ApiError:
        return self.error(DEADLINE_CODE, f"{self._budget_words()} for cloud calls ran out "
                          "before this call", None, action=action, context=context)

    def collect(self, fetch: Callable[[Hashable | None], Page], *, action: str,
                context: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """Every item of a paged list: `fetch(cursor)` answers one page (cursor None: the first).

        Stops with an ApiError (PAGING_CODE) rather than go on without end: past LIMITS.max_pages
        pages or LIMITS.max_items items, on a next-page cursor it was given before (the same
        NextToken again), or on a page it has seen before (an API that answers the first page
        whatever the offset). Every page is a call, so the budget bounds the list too.
        """
        items: list[dict[str, Any]] = []
        cursors: set[Hashable] = set()
        pages: set[str] = set()
        cursor: Hashable | None = None

        def stop(why: str) -> ApiError:
            return self.error(PAGING_CODE, f"{why}; stopped after {len(pages)} page(s) and {len(items):,} item(s), "
                              "so the list was not finished", None, action=action, context=context)

        for number in itertools.count(1):
            if number > LIMITS.max_pages:
                raise stop(f"more than {LIMITS.max_pages} pages (gpuctl's cap per list)")
            page = fetch(cursor)
            seen = fingerprint(page.items)
            if page.items and seen in pages:
                raise stop("the API answered a page it had already given (it does not advance)")
            pages.add(seen)
            items += page.items
            if len(items) > LIMITS.max_items:
                raise stop(f"more than {LIMITS.max_items:,} items (gpuctl's cap per list)")
            if page.next is None:
                return items
            if page.next == cursor or page.next in cursors:
                raise stop("the API gave the same next-page token again")
            cursors.add(page.next)
            cursor = page.next
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def describe(self, code: str, message: str, context: Mapping[str, str]) -> tuple[str, str | None]:
        """(what went wrong, what to do): each cloud's describe_error."""
        raise NotImplementedError

    def describe_common(self, code: str, message: str, context: Mapping[str, str]) -> tuple[str, str | None] | None:
        """The text of gpuctl's own codes, the same for both clouds; None for the API's codes."""
        action = context.get("action", "the API call")
        where = f"{self.CLOUD} {action} in {self.region}"
        if code == DEADLINE_CODE:
            return (f"{where}: not asked: {message}",
                    "run the command again when the API answers faster, or narrow it (--region, --provider)")
        if code == PAGING_CODE:
            return (f"{where}: {message}", "run the command again; if it keeps happening, the API's paging is broken")
        if code == BAD_ANSWER_CODE:
            return (f"{where}: the answer was not the API's: {message}",
                    "a proxy or gateway between gpuctl and the API may have answered instead; run the command again")
        if code.startswith(HTTP_CODE_PREFIX) and code[len(HTTP_CODE_PREFIX):].isdigit():
            return (f"{where}: {message}",
                    "the cloud (or a proxy before it) failed; run the command again later" if code.startswith(
                        f"{HTTP_CODE_PREFIX}5") else "check the network path and any proxy setting")
        return None

    def error(self, code: str, message: str, request_id: str | None, *, action: str, tries: int = 1,
              context: Mapping[str, str] | None = None, note: str | None = None) -> ApiError:
        message = self.scrub(message)
        where = {"action": action, **(context or {})}
        what, hint = self.describe_common(code, message, where) or self.describe(code, message, where)
        if code in self.NETWORK_CODES:
            what += f" (timeout {self.timeout_s:g}s per try)"
        if tries > 1:
            what += f" after {tries} tries"
        if note:
            what += f" ({note})"
        if request_id:
            what += f" [RequestId {request_id}]"
        return self.ERROR(self.scrub(what), code=code, request_id=request_id, api_message=message, hint=hint)


def fingerprint(items: Sequence[Any]) -> str:
    """A page's identity, to see it again: the hash of its JSON (any value the SDK gave, NaN included)."""
    text = json.dumps(items, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def number(value: Any) -> float | None:
    """A number the API sent (a float, an int or a numeric string), NaN and infinities included (a
    price cache refuses those by name rather than letting them vanish into "no price"); None otherwise."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def finite(value: Any) -> float | None:
    """A number the API sent (a float, an int or a numeric string): None unless it is a finite one."""
    found = number(value)
    return found if found is not None and math.isfinite(found) else None
