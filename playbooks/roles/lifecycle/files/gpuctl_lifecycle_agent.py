#!/usr/bin/python3
"""gpuctl's node-side lifecycle agent: idle stop and the spot interruption hook (installed by gpuctl).

Standard library only: it runs on the node's own python3, before or without anything gpuctl
installs. One long-running process (a systemd service, Restart=always) with a loop that ticks every
second, because the spot watch polls every 5 s: a timer would start a Python process 17 000 times a
day and lose the idle clock between runs.

- Idle stop: every `check_seconds` it reads GPU utilisation (nvidia-smi), and where configured the
  login sessions (`who`) and the processes holding a GPU. A reading it cannot get counts as busy:
  the agent never stops a node on missing evidence. After `idle_seconds` of continuous idleness it
  stops the instance in the no-charge mode or releases it; `warn_seconds` before that it announces
  the stop to logged-in users (`wall`). Any use in between resets the clock and says so.
  On Tencent a stop is StopInstances with StopType SOFT_FIRST (a soft shutdown, then a forced one
  if the soft one fails) and StoppedMode STOP_CHARGING; the call only starts the stop, so the agent
  then reads DescribeInstances every `confirm_seconds` until the instance is STOPPING or STOPPED
  (done), or the stop is reported FAILED or not seen within `confirm_timeout_seconds` (not done:
  the next idle check stops again), as terraform-provider-tencentcloud's own stop does
  (resource_tc_instance.go:2803-2858 at v1.82.42). A refusal of STOP_CHARGING is never retried as a
  stop that keeps billing: the agent says so and leaves the node running (gpuctl validate refuses
  `idle_action: stop` where Tencent documents that it cannot stop charging).
- Spot: every `spot_poll_seconds` it reads the metadata's termination time (404: none). On a
  notice it runs the user's on_interruption command once, with /bin/sh -c, with
  GPUCTL_TERMINATION_TIME, GPUCTL_SECONDS_LEFT and (when set) GPUCTL_CHECKPOINT_DIR.
- The cloud is called with the instance's own role credentials, read from the metadata service at
  the moment of the call (RAM role / CAM role STS tokens), never with a key stored on the node.

Every action and every decision is one line on stdout (journald), with its reason. The
configuration is /etc/gpuctl/lifecycle.json, root-only, written by the lifecycle role.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # aliases only for annotations: nodes may run Python 3.8, where list[str] fails at runtime
    Runner = Callable[[list[str]], str]
    Hook = Callable[[list[str], dict[str, str]], None]

CONFIG = "/etc/gpuctl/lifecycle.json"
# Written by gpuctl on every lab node (toolkit/providers/lab/replay.py): the only place where a
# utilisation file may stand in for nvidia-smi.
LAB_MARKER = "/etc/gpuctl-lab"
NVIDIA_SMI_UTILISATION = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]
NVIDIA_SMI_PROCESSES = ["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"]
COMMAND_TIMEOUT = 20  # seconds for nvidia-smi / who; a hung driver counts as busy, not idle
HTTP_TIMEOUT = 5
# ECS and CVM API versions the actions belong to (ECS 2014-05-26, CVM 2017-03-12).
ECS_VERSION = "2014-05-26"
CVM_VERSION = "2017-03-12"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
# Tencent's metadata gives the termination time as the instance's clock in UTC+8, without a zone
# (https://www.tencentcloud.com/document/product/213/32487).
TENCENT_ZONE = dt.timezone(dt.timedelta(hours=8))
UTC = dt.timezone.utc  # noqa: UP017 -- datetime.UTC is 3.11+; the node's python3 may be 3.8

# Per cloud: the metadata paths, below the metadata base URL.
METADATA_PATHS = {
    "alicloud": {"instance": "instance-id", "region": "region-id", "roles": "ram/security-credentials/",
                 "spot": "instance/spot/termination-time"},
    "tencentcloud": {"instance": "instance-id", "region": "placement/region", "roles": "cam/security-credentials/",
                     "spot": "spot/termination-time"},
}
# Tencent StopInstances: "SOFT_FIRST：表示在正常关闭失败后进行强制关闭" and "STOP_CHARGING：关机停止收费"
# (tencentcloud-sdk-python-cvm 3.1.178 models.py:22621-22625); the default StopType is SOFT, whose failure
# leaves the instance running.
TENCENT_STOP = {"StopType": "SOFT_FIRST", "StoppedMode": "STOP_CHARGING"}
# "不支持关机不收费特性" (errorcodes.py:1229-1230): the instance cannot stop charging; a plain stop would bill on.
TENCENT_NO_STOP_CHARGING = "UnsupportedOperation.StoppedModeStopCharging"
# Default API endpoints reached from inside the VPC, so a node without a public address can call them.
DEFAULT_ENDPOINTS = {"alicloud": "https://ecs-vpc.{region}.aliyuncs.com",
                     "tencentcloud": "https://cvm.internal.tencentcloudapi.com"}


def log(event: str, message: str) -> None:
    """One line per decision or action: journald keeps it with the unit's name and a time."""
    sys.stdout.write(f"gpuctl-lifecycle: {event}: {message}\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Config:
    cloud: str  # alicloud | tencentcloud
    metadata_url: str  # base, ending in /latest/meta-data/
    metadata_token_url: str = ""  # Alibaba's hardened mode: PUT here for a session token ("" : none)
    api_endpoint: str = ""  # "": DEFAULT_ENDPOINTS for the instance's region
    role: str = ""  # "": the role the metadata lists for this instance
    idle_seconds: int = 0  # 0: idle stop off
    idle_action: str = "stop"
    idle_signals: tuple[str, ...] = ("gpu",)
    gpu_busy_percent: int = 5
    check_seconds: int = 60
    warn_seconds: int = 60
    spot_poll_seconds: int = 5
    on_interruption: str = ""
    checkpoint_dir: str = ""
    utilisation_file: str = ""  # lab nodes only: replayed utilisation instead of nvidia-smi
    confirm_seconds: int = 10  # Tencent: seconds between reads of the instance's state after a stop
    confirm_timeout_seconds: int = 600  # ... and how long a stop may take before it counts as failed

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown keys {', '.join(unknown)}")
        values = dict(data)
        if "idle_signals" in values:
            values["idle_signals"] = tuple(values["idle_signals"])
        config = cls(**values)
        if config.cloud not in METADATA_PATHS:
            raise ValueError(f"cloud {config.cloud!r} is not alicloud or tencentcloud")
        if config.idle_action not in ("stop", "release"):
            raise ValueError(f"idle_action {config.idle_action!r} is not stop or release")
        return config


# --- Readers: each returns the reasons the node is busy (empty: idle) ------------------------------

def run_command(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[:200]}")
    return done.stdout


def parse_utilisation(text: str) -> list[int]:
    """nvidia-smi's `utilization.gpu` CSV (no header, no units): one percentage per GPU."""
    values = []
    for line in text.splitlines():
        if line.strip():
            values.append(int(line.strip()))
    if not values:
        raise ValueError("no GPU listed")
    return values


def gpu_busy(config: Config, run: Runner, read_file: Callable[[str], str]) -> list[str]:
    try:
        if config.utilisation_file:
            text, source = read_file(config.utilisation_file), f"replayed from {config.utilisation_file}"
        else:
            text, source = run(NVIDIA_SMI_UTILISATION), "nvidia-smi"
        values = parse_utilisation(text)
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
        return [f"no GPU utilisation reading ({exc}); never stopped without one"]
    busy = [f"GPU {i} at {v}%" for i, v in enumerate(values) if v >= config.gpu_busy_percent]
    return [f"{', '.join(busy)} ({source})"] if busy else []


def sessions_busy(run: Runner) -> list[str]:
    try:
        lines = [line for line in run(["who"]).splitlines() if line.strip()]
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return [f"no reading of login sessions ({exc})"]
    users = sorted({line.split()[0] for line in lines})
    return [f"{len(lines)} login session(s) ({', '.join(users)})"] if lines else []


def processes_busy(run: Runner) -> list[str]:
    try:
        lines = [line.strip() for line in run(NVIDIA_SMI_PROCESSES).splitlines() if line.strip()]
        for line in lines:
            pid = line.split(",", 1)[0].strip()
            if not pid.isdigit():
                raise ValueError(f"unreadable line {line[:80]!r}")
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
        return [f"no reading of GPU processes ({exc})"]
    return [f"{len(lines)} process(es) on the GPUs ({', '.join(lines[:3])})"] if lines else []


def read_text(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def busy_reasons(config: Config, run: Runner = run_command, read_file: Callable[[str], str] = read_text) -> list[str]:
    reasons = gpu_busy(config, run, read_file)
    if "ssh_sessions" in config.idle_signals:
        reasons += sessions_busy(run)
    if "processes" in config.idle_signals:
        reasons += processes_busy(run)
    return reasons


# --- The idle clock: pure, so that its decisions are tested with an injected clock ------------------

@dataclass
class IdleClock:
    """Continuous idleness since the first idle reading; any busy reading resets it.

    observe() answers what to do now: "busy", "idle" (keep counting), "warn" (announce the stop),
    "act" (stop or release now) or "done" (already acted). The announcement always comes first: if
    the threshold is reached before a warning went out, this reading warns and the next one acts.
    """

    idle_seconds: float
    warn_seconds: float
    idle_since: float | None = None
    warned: bool = False
    acted: bool = False

    def observe(self, now: float, busy: bool) -> str:
        if self.acted:
            return "done"
        if busy:
            self.idle_since, self.warned = None, False
            return "busy"
        if self.idle_since is None:
            self.idle_since = now
        idle_for = now - self.idle_since
        if idle_for >= self.idle_seconds and self.warned:
            return "act"
        if idle_for >= self.idle_seconds - self.warn_seconds and not self.warned:
            self.warned = True
            return "warn"
        return "idle"

    def idle_for(self, now: float) -> float:
        return 0.0 if self.idle_since is None else now - self.idle_since


# --- Signing: Alibaba ACS3-HMAC-SHA256 and Tencent TC3-HMAC-SHA256 ----------------------------------

def _encode(text: str) -> str:
    return urllib.parse.quote(text, safe="~")


def acs3_authorization(method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str],
                       payload_sha256: str, access_key_id: str, secret: str) -> str:
    """The Authorization header of Alibaba's signature V3 (ACS3-HMAC-SHA256).

    CanonicalRequest = method \\n path \\n sorted percent-encoded query \\n "name:value\\n" per signed
    header \\n signed header names joined by ';' \\n hex(sha256(body)); StringToSign =
    "ACS3-HMAC-SHA256" \\n hex(sha256(CanonicalRequest)); signature = hex(HMAC-SHA256(secret, it)).
    Signed headers: host, content-type and every x-acs-* header (Alibaba Cloud, "Request syntax and
    signature method V3 for ROA and RPC APIs").
    """
    lowered = {name.lower(): value.strip() for name, value in headers.items()}
    signed = sorted(name for name in lowered if name in ("host", "content-type") or name.startswith("x-acs-"))
    canonical = "\n".join([
        method, path or "/",
        "&".join(f"{_encode(k)}={_encode(query[k])}" for k in sorted(query)),
        "".join(f"{name}:{lowered[name]}\n" for name in signed),
        ";".join(signed), payload_sha256,
    ])
    to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
    signature = hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    return f"ACS3-HMAC-SHA256 Credential={access_key_id},SignedHeaders={';'.join(signed)},Signature={signature}"


def tc3_authorization(host: str, service: str, payload: bytes, timestamp: int,
                      secret_id: str, secret_key: str, content_type: str = "application/json; charset=utf-8") -> str:
    """The Authorization header of Tencent Cloud's signature v3 (TC3-HMAC-SHA256) for a POST to /.

    Signed headers content-type and host, as tencentcloud-sdk-python signs them (Tencent Cloud API,
    "Signature v3": CanonicalRequest = POST \n / \n (empty query) \n headers \n names \n
    hex(sha256(body)); key = HMAC chain of "TC3"+SecretKey, date, service, "tc3_request").
    """
    signed = "content-type;host"
    canonical = "\n".join([
        "POST", "/", "",
        f"content-type:{content_type}\nhost:{host}\n",
        signed, hashlib.sha256(payload).hexdigest(),
    ])
    date = dt.datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")
    scope = f"{date}/{service}/tc3_request"
    to_sign = "\n".join(["TC3-HMAC-SHA256", str(timestamp), scope, hashlib.sha256(canonical.encode()).hexdigest()])

    def mac(key: bytes, text: str) -> bytes:
        return hmac.new(key, text.encode(), hashlib.sha256).digest()

    key = mac(mac(mac(("TC3" + secret_key).encode(), date), service), "tc3_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"TC3-HMAC-SHA256 Credential={secret_id}/{scope}, SignedHeaders={signed}, Signature={signature}"


# --- The cloud: metadata and the two API calls ------------------------------------------------------

class CloudError(Exception):
    """A failed cloud call; `code` is the API's error code where it gave one."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Http:
    """The agent's only way out. Tests replace `open`; nothing here follows redirects elsewhere."""

    open: Callable[[urllib.request.Request], Any] = field(
        default=lambda request: urllib.request.urlopen(request, timeout=HTTP_TIMEOUT))

    def call(self, url: str, *, method: str = "GET", headers: Mapping[str, str] | None = None,
             body: bytes | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
        try:
            with self.open(request) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read() or b""
        except (urllib.error.URLError, OSError) as exc:
            raise CloudError(f"{method} {url}: {getattr(exc, 'reason', exc)}") from None


@dataclass(frozen=True)
class Credentials:
    key_id: str
    secret: str
    token: str


class Cloud:
    """The instance's own view of its cloud: metadata, and one stop/release call."""

    def __init__(self, config: Config, http: Http, now: Callable[[], float] = time.time) -> None:
        self.config, self.http, self.now = config, http, now
        self.paths = METADATA_PATHS[config.cloud]

    def _metadata_headers(self) -> dict[str, str]:
        if not self.config.metadata_token_url:
            return {}
        # Alibaba's hardened mode requires a session token; normal mode answers without one.
        status, body = self.http.call(self.config.metadata_token_url, method="PUT",
                                      headers={"X-aliyun-ecs-metadata-token-ttl-seconds": "300"})
        return {"X-aliyun-ecs-metadata-token": body.decode().strip()} if status == 200 else {}

    def metadata(self, key: str, *, headers: Mapping[str, str] | None = None) -> tuple[int, str]:
        status, body = self.http.call(self.config.metadata_url + self.paths[key] if key in self.paths
                                      else self.config.metadata_url + key,
                                      headers=headers if headers is not None else self._metadata_headers())
        return status, body.decode(errors="replace").strip()

    def _metadata_value(self, key: str, headers: Mapping[str, str]) -> str:
        status, text = self.metadata(key, headers=headers)
        if status != 200 or not text:
            raise CloudError(f"metadata {key} answered {status}")
        return text

    def termination_time(self) -> str | None:
        """The spot termination notice, or None (the metadata answers 404 until there is one)."""
        status, text = self.metadata("spot")
        if status == 404:
            return None
        if status != 200:
            raise CloudError(f"metadata {self.paths['spot']} answered {status}")
        return text or None

    def credentials(self, headers: Mapping[str, str]) -> Credentials:
        role = self.config.role or self._metadata_value("roles", headers).splitlines()[0].strip()
        if not role or "/" in role:
            raise CloudError(f"no usable instance role in the metadata ({role!r})")
        raw = self._metadata_value(self.paths["roles"] + role, headers)
        try:
            data = json.loads(raw)
            if self.config.cloud == "alicloud":
                return Credentials(data["AccessKeyId"], data["AccessKeySecret"], data["SecurityToken"])
            return Credentials(data["TmpSecretId"], data["TmpSecretKey"], data["Token"])
        except (ValueError, KeyError, TypeError):
            raise CloudError(f"the credentials of role {role} are not readable") from None

    def act(self, action: str) -> str:
        """Stop (no-charge mode) or release this instance; returns the cloud's request id."""
        headers = self._metadata_headers()
        instance = self._metadata_value("instance", headers)
        region = self._metadata_value("region", headers)
        creds = self.credentials(headers)
        endpoint = self.config.api_endpoint or DEFAULT_ENDPOINTS[self.config.cloud].format(region=region)
        if self.config.cloud == "alicloud":
            return self._alicloud(endpoint, action, instance, region, creds)
        return self._tencentcloud(endpoint, action, instance, region, creds)

    def _alicloud(self, endpoint: str, action: str, instance: str, region: str, creds: Credentials) -> str:
        # ECS StopInstance with StoppedMode=StopCharging (economical mode: compute stops billing,
        # disks are kept); DeleteInstance with Force=true releases a running instance.
        name, query = (("StopInstance", {"InstanceId": instance, "StoppedMode": "StopCharging"})
                       if action == "stop" else ("DeleteInstance", {"InstanceId": instance, "Force": "true"}))
        host = urllib.parse.urlsplit(endpoint).netloc
        headers = {
            "host": host, "x-acs-action": name, "x-acs-version": ECS_VERSION,
            "x-acs-date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now())),
            "x-acs-signature-nonce": uuid.uuid4().hex, "x-acs-content-sha256": EMPTY_SHA256,
            "x-acs-security-token": creds.token,
        }
        headers["Authorization"] = acs3_authorization("POST", "/", query, headers, EMPTY_SHA256,
                                                      creds.key_id, creds.secret)
        url = endpoint.rstrip("/") + "/?" + "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()))
        status, body = self.http.call(url, method="POST", headers=headers, body=b"")
        data = _json(body)
        if status != 200:
            raise CloudError(f"{name} answered {status}: {data.get('Code', '')} {data.get('Message', '')}".strip())
        return str(data.get("RequestId", ""))

    def _tencentcloud(self, endpoint: str, action: str, instance: str, region: str, creds: Credentials) -> str:
        # StopInstances SOFT_FIRST / STOP_CHARGING (TENCENT_STOP); TerminateInstances releases.
        name, params = (("StopInstances", {"InstanceIds": [instance], **TENCENT_STOP})
                        if action == "stop" else ("TerminateInstances", {"InstanceIds": [instance]}))
        return str(self._tc3_call(endpoint, name, params, region, creds).get("RequestId", ""))

    def _tc3_call(self, endpoint: str, name: str, params: Mapping[str, Any], region: str,
                  creds: Credentials) -> dict[str, Any]:
        """One TC3-signed CVM call; its Response object, or CloudError with the API's code."""
        payload = json.dumps(params, separators=(",", ":")).encode()
        host = urllib.parse.urlsplit(endpoint).netloc
        timestamp = int(self.now())
        headers = {
            "Content-Type": "application/json; charset=utf-8", "Host": host, "X-TC-Action": name,
            "X-TC-Version": CVM_VERSION, "X-TC-Timestamp": str(timestamp), "X-TC-Region": region,
            "X-TC-Token": creds.token,
            "Authorization": tc3_authorization(host, "cvm", payload, timestamp, creds.key_id, creds.secret),
        }
        status, body = self.http.call(endpoint.rstrip("/") + "/", method="POST", headers=headers, body=payload)
        response = _json(body).get("Response", {})
        error = response.get("Error") if isinstance(response, dict) else None
        if status != 200 or error or not isinstance(response, dict):
            code = str(error.get("Code", "")) if isinstance(error, dict) else ""
            detail = f"{code} {error.get('Message', '')}" if isinstance(error, dict) else ""
            raise CloudError(f"{name} answered {status}: {detail}".strip(), code=code)
        return response

    def stop_state(self) -> dict[str, str]:
        """Tencent: this instance's InstanceState, LatestOperation, LatestOperationState and
        StopChargingMode, from DescribeInstances (the instance's own id, read from the metadata)."""
        headers = self._metadata_headers()
        instance = self._metadata_value("instance", headers)
        region = self._metadata_value("region", headers)
        creds = self.credentials(headers)
        endpoint = self.config.api_endpoint or DEFAULT_ENDPOINTS[self.config.cloud].format(region=region)
        response = self._tc3_call(endpoint, "DescribeInstances", {"InstanceIds": [instance]}, region, creds)
        found = [i for i in response.get("InstanceSet") or ()
                 if isinstance(i, dict) and i.get("InstanceId") == instance]
        if not found:
            raise CloudError(f"DescribeInstances does not list {instance}")
        keys = ("InstanceState", "LatestOperation", "LatestOperationState", "StopChargingMode")
        return {key: str(found[0].get(key) or "") for key in keys}


def _json(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def seconds_left(notice: str, cloud: str, now: float) -> int | None:
    """Seconds from `now` to the termination time, or None when the time is not readable.

    Alibaba writes UTC ISO 8601 (2015-01-05T18:02:00Z); Tencent "2018-08-18 12:05:33" in UTC+8.
    """
    text = notice.strip()
    try:
        if text.endswith("Z"):
            when = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        else:
            when = dt.datetime.fromisoformat(text.replace(" ", "T"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=TENCENT_ZONE if cloud == "tencentcloud" else UTC)
    except ValueError:
        return None
    return max(0, int(when.timestamp() - now))


# --- The agent ----------------------------------------------------------------------------------------

def run_hook(argv: list[str], env: dict[str, str]) -> None:
    """Run the interruption command in the background; its output goes to the agent's log."""
    def wait() -> None:
        try:
            code = subprocess.run(argv, env=env, check=False).returncode
            log("interruption-hook", f"on_interruption exited {code}")
        except OSError as exc:
            log("interruption-hook", f"on_interruption could not start: {exc}")

    threading.Thread(target=wait, daemon=True).start()


def announce(message: str) -> None:
    try:
        subprocess.run(["wall"], input=message + "\n", text=True, timeout=COMMAND_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log("announce-failed", f"wall: {exc}")


@dataclass
class Agent:
    config: Config
    cloud: Cloud
    busy: Callable[[], list[str]]
    announce: Callable[[str], None] = announce
    hook: Hook = run_hook
    wall_clock: Callable[[], float] = time.time  # the termination time is a date; tick() gets monotonic time
    clock: IdleClock = field(init=False)
    next_check: float = 0.0
    next_spot: float = 0.0
    hook_ran: bool = False
    spot_error: str = ""
    # Tencent: when the accepted stop started (monotonic), until it is confirmed or counted as failed.
    stop_pending_since: float | None = None
    next_confirm: float = 0.0
    confirm_error: str = ""
    # Tencent refused STOP_CHARGING for this instance: a stop would keep billing, so idle stop is over.
    stop_refused: bool = False

    def __post_init__(self) -> None:
        self.clock = IdleClock(self.config.idle_seconds, min(self.config.warn_seconds, self.config.idle_seconds))

    def tick(self, now: float) -> None:
        if now >= self.next_spot:
            self.next_spot = now + self.config.spot_poll_seconds
            self.watch_spot(now)
        if self.stop_pending_since is not None:
            if now >= self.next_confirm:
                self.next_confirm = now + self.config.confirm_seconds
                self.confirm_stop(now)
            return  # no new idle decision while a stop is under way
        if self.config.idle_seconds and not self.stop_refused and now >= self.next_check:
            self.next_check = now + self.config.check_seconds
            self.check_idle(now)

    def watch_spot(self, now: float) -> None:
        if self.hook_ran:
            return
        try:
            notice = self.cloud.termination_time()
        except CloudError as exc:
            # Said once per distinct failure, not every 5 s while the metadata service is down.
            if str(exc) != self.spot_error:
                log("spot-watch-failed", f"{exc}; retrying every {self.config.spot_poll_seconds} s")
            self.spot_error = str(exc)
            return
        if self.spot_error:
            log("spot-watch", "the metadata service answers again")
            self.spot_error = ""
        if notice is None:
            return
        self.hook_ran = True  # once per notice, whatever happens next
        left = seconds_left(notice, self.config.cloud, self.wall_clock())
        shown = "unknown" if left is None else f"{left} s"
        if not self.config.on_interruption:
            log("spot-notice", f"termination at {notice} ({shown} left); no on_interruption command is set")
            return
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
               "GPUCTL_TERMINATION_TIME": notice, "GPUCTL_SECONDS_LEFT": "" if left is None else str(left)}
        if self.config.checkpoint_dir:
            env["GPUCTL_CHECKPOINT_DIR"] = self.config.checkpoint_dir
        log("spot-notice", f"termination at {notice} ({shown} left): running on_interruption once")
        self.hook(["/bin/sh", "-c", self.config.on_interruption], env)

    def check_idle(self, now: float) -> None:
        reasons = self.busy()
        was_idle_for = self.clock.idle_for(now)
        was_warned = self.clock.warned
        decision = self.clock.observe(now, busy=bool(reasons))
        what = "release" if self.config.idle_action == "release" else "stop"
        if decision == "busy":
            if was_idle_for > 0 or was_warned:
                log("idle-reset", f"busy again after {was_idle_for:.0f} s idle: {'; '.join(reasons)}")
            if was_warned:
                self.announce(f"gpuctl: the {what} of this node is cancelled: it is in use again.")
        elif decision == "idle":
            log("idle", f"idle for {self.clock.idle_for(now):.0f} s of {self.config.idle_seconds} s")
        elif decision == "warn":
            left = max(0, self.config.idle_seconds - self.clock.idle_for(now))
            message = (f"gpuctl: this node has been idle for {self.clock.idle_for(now):.0f} s; it will "
                       f"{what} in about {left:.0f} s unless its GPUs are used (lifecycle.idle_stop_minutes).")
            log("announce", message)
            self.announce(message)
        elif decision == "act":
            self.act(now)

    def act(self, now: float) -> None:
        what = "release" if self.config.idle_action == "release" else "stop"
        reason = f"idle for {self.clock.idle_for(now):.0f} s (idle_seconds {self.config.idle_seconds})"
        log(what, f"{reason}: calling the cloud")
        try:
            request_id = self.cloud.act(self.config.idle_action)
        except CloudError as exc:
            if exc.code == TENCENT_NO_STOP_CHARGING:
                # Never a stop that keeps billing, and never a release the spec did not ask for.
                self.stop_refused = True
                log("stop-refused", f"{exc}: Tencent will not stop charging this instance (local disks, spot or "
                    "monthly billing), so a stop would save nothing; the node is left running and idle stop is "
                    "off until the agent restarts; set lifecycle.idle_action: release, or stop it by hand")
                return
            # Not marked done: the next check tries again, still only while the node stays idle.
            log(f"{what}-failed", f"{exc}; trying again at the next check")
            return
        log(f"{what}-requested", f"the cloud accepted the {what} (request {request_id or 'without id'})")
        if what == "stop" and self.config.cloud == "tencentcloud":
            # StopInstances only starts the stop: it is done once DescribeInstances shows it.
            self.stop_pending_since = now
            self.next_confirm = now + self.config.confirm_seconds
            self.confirm_error = ""
            return
        self.clock.acted = True

    def confirm_stop(self, now: float) -> None:
        """Tencent: done when the instance is STOPPING or STOPPED; failed (not done, the next idle check
        stops again) when the stop is reported FAILED or not seen within confirm_timeout_seconds."""
        assert self.stop_pending_since is not None
        waited = now - self.stop_pending_since
        try:
            state = self.cloud.stop_state()
        except CloudError as exc:
            if str(exc) != self.confirm_error:
                log("stop-unconfirmed", f"cannot read the instance's state: {exc}; asking again")
            self.confirm_error = str(exc)
            state = {}
        instance_state = state.get("InstanceState", "")
        if instance_state in ("STOPPING", "STOPPED"):
            self.stop_pending_since = None
            self.clock.acted = True
            charging = state.get("StopChargingMode", "")
            charged = charging not in ("", "STOP_CHARGING", "NOT_APPLICABLE")
            note = f"; but StopChargingMode is {charging}" if charged else ""
            log("stopped", f"the instance is {instance_state} after {waited:.0f} s{note}")
            return
        failed = state.get("LatestOperation") == "StopInstances" and state.get("LatestOperationState") == "FAILED"
        if failed or waited >= self.config.confirm_timeout_seconds:
            self.stop_pending_since = None
            why = "Tencent reports the stop FAILED" if failed else f"not stopped after {waited:.0f} s"
            log("stop-failed", f"{why} (state {instance_state or 'unknown'}); not done: the next idle check stops "
                "again")


def load_config(path: str) -> Config:
    with open(path) as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("utilisation_file") and not os.path.exists(LAB_MARKER):
        # A replayed utilisation would let a file decide when a real node stops.
        raise ValueError(f"utilisation_file is honoured on gpuctl lab nodes only ({LAB_MARKER} is absent)")
    return Config.from_dict(data)


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else CONFIG
    try:
        config = load_config(path)
    except (OSError, ValueError, TypeError) as exc:
        log("config-error", f"{path}: {exc}")
        return 2
    agent = Agent(config, Cloud(config, Http()), busy=lambda: busy_reasons(config))
    idle = f"{config.idle_action} after {config.idle_seconds} s idle" if config.idle_seconds else "idle stop off"
    hook = "on_interruption set" if config.on_interruption else "no on_interruption"
    log("start", f"{config.cloud}: {idle} (signals {', '.join(config.idle_signals)}); spot watch every "
        f"{config.spot_poll_seconds} s, {hook}")
    while True:
        agent.tick(time.monotonic())
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
