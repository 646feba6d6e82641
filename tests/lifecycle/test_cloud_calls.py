"""The agent's cloud calls against a fake metadata service and a fake cloud API on loopback.

The signatures are checked with the clouds' own SDKs' signing code (alibabacloud_tea_openapi's
ACS3-HMAC-SHA256, tencentcloud-sdk-python's TC3-HMAC-SHA256), not with the agent's: a request the
fake accepts is one the cloud's own client would have signed the same way.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.lifecycle.agent import load_agent

pytestmark = pytest.mark.fake_cloud
agent_module = load_agent()

ROLE = "gpuctl-demo-node"
ALI_CREDS = {"AccessKeyId": "STS.NUgYrLnoC37mZZCNnAbez", "AccessKeySecret": "sts-secret-ali",
             "Expiration": "2026-12-01T12:00:00Z", "SecurityToken": "CAIS-token-ali", "LastUpdated": "x",
             "Code": "Success"}
TC_CREDS = {"TmpSecretId": "AKIDtmp123", "TmpSecretKey": "tmp-secret-tc", "ExpiredTime": 1790000000,
            "Expiration": "2026-12-01T12:00:00Z", "Token": "tc-token-xyz", "Code": "Success"}


@dataclass
class Fake:
    cloud: str
    notice: str | None = None
    hardened: bool = False  # Alibaba: metadata only with a session token
    api_error: bool = False
    tc_error_code: str = ""  # Tencent: answer every call with this API error code
    tc_state: str = "STOPPING"  # Tencent: the InstanceState DescribeInstances reports
    calls: list[dict[str, Any]] = field(default_factory=list)
    metadata_reads: list[str] = field(default_factory=list)

    def metadata(self, path: str) -> tuple[int, str]:
        prefix = "ram" if self.cloud == "alicloud" else "cam"
        answers = {
            "instance-id": "i-bp67acfmxazb4ph" if self.cloud == "alicloud" else "ins-r8hr2upy",
            "region-id": "cn-beijing", "placement/region": "ap-shanghai",
            f"{prefix}/security-credentials/": ROLE + "\n",
            f"{prefix}/security-credentials/{ROLE}": json.dumps(ALI_CREDS if self.cloud == "alicloud" else TC_CREDS),
        }
        if path in ("instance/spot/termination-time", "spot/termination-time"):
            return (404, "Not Found") if self.notice is None else (200, self.notice)
        return (200, answers[path]) if path in answers else (404, "Not Found")


def handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def answer(self, status: int, body: str | bytes) -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self) -> None:
            if self.path == "/latest/api/token" and self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds"):
                self.answer(200, "md-session-token")
            else:
                self.answer(404, "")

        def do_GET(self) -> None:
            path = self.path.removeprefix("/latest/meta-data/")
            fake.metadata_reads.append(path)
            if fake.hardened and self.headers.get("X-aliyun-ecs-metadata-token") != "md-session-token":
                self.answer(401, "Unauthorized")
                return
            self.answer(*fake.metadata(path))

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            split = urllib.parse.urlsplit(self.path)
            fake.calls.append({"path": split.path, "query": dict(urllib.parse.parse_qsl(split.query)),
                               "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
            if fake.cloud == "alicloud":
                if fake.api_error:
                    self.answer(403, json.dumps({"Code": "Forbidden.RAM", "Message": "denied"}))
                else:
                    self.answer(200, json.dumps({"RequestId": "1C488B66-B819-4D14-8711-C4EAAA13AC01"}))
            else:
                response: dict[str, Any] = {"RequestId": "6ef60bec-0242-43af-bb20-270359fb54a7"}
                if self.headers.get("X-TC-Action") == "DescribeInstances":
                    # The Instance fields of DescribeInstances (SDK models.py class Instance).
                    response["InstanceSet"] = [{"InstanceId": "ins-r8hr2upy", "InstanceState": fake.tc_state,
                                                "LatestOperation": "StopInstances",
                                                "LatestOperationState": "OPERATING",
                                                "StopChargingMode": "NOT_APPLICABLE"}]
                    response["TotalCount"] = 1
                code = "UnauthorizedOperation" if fake.api_error else fake.tc_error_code
                if code:
                    response = {"Error": {"Code": code, "Message": "denied"}, "RequestId": "r-err"}
                self.answer(200, json.dumps({"Response": response}))

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(fake: Fake) -> Any:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler(fake))
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        config = agent_module.Config(
            cloud=fake.cloud, metadata_url=base + "/latest/meta-data/",
            metadata_token_url=base + "/latest/api/token" if fake.cloud == "alicloud" else "",
            api_endpoint=base, idle_seconds=600)
        return agent_module.Cloud(config, agent_module.Http(), now=lambda: 1_764_583_200.0)  # 2025-12-01T10:00:00Z

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def alibaba_sdk_authorization(call: dict[str, Any], secret: str) -> str:
    from alibabacloud_tea_openapi.utils import Utils

    # The headers the request says it signed (the test asserts that list literally): urllib adds a
    # content-type of its own to a POST, which the agent does not sign.
    signed = call["headers"]["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {k: v for k, v in call["headers"].items() if k in signed}

    class Request:
        method = "POST"
        pathname = "/"
        query = call["query"]

    Request.headers = headers  # type: ignore[attr-defined]
    return str(Utils.get_authorization(Request, "ACS3-HMAC-SHA256", headers["x-acs-content-sha256"],
                                       call["headers"]["authorization"].split("Credential=")[1].split(",")[0], secret))


@pytest.mark.parametrize("hardened", [False, True], ids=["normal", "hardened-metadata"])
def test_alibaba_stop_is_stop_instance_stop_charging_signed_with_the_role_token(serve: Any, hardened: bool) -> None:
    fake = Fake("alicloud", hardened=hardened)
    assert serve(fake).act("stop") == "1C488B66-B819-4D14-8711-C4EAAA13AC01"
    [call] = fake.calls
    assert call["query"] == {"InstanceId": "i-bp67acfmxazb4ph", "StoppedMode": "StopCharging"}
    headers = call["headers"]
    assert headers["x-acs-action"] == "StopInstance"
    assert headers["x-acs-version"] == "2014-05-26"
    assert headers["x-acs-date"] == "2025-12-01T10:00:00Z"
    assert headers["x-acs-security-token"] == "CAIS-token-ali"
    assert headers["x-acs-content-sha256"] == hashlib.sha256(b"").hexdigest()
    assert headers["authorization"].startswith(
        "ACS3-HMAC-SHA256 Credential=STS.NUgYrLnoC37mZZCNnAbez,SignedHeaders=host;x-acs-action;x-acs-content-sha256;"
        "x-acs-date;x-acs-security-token;x-acs-signature-nonce;x-acs-version,Signature=")
    assert headers["authorization"] == alibaba_sdk_authorization(call, "sts-secret-ali")
    assert "ram/security-credentials/" in fake.metadata_reads  # the role is the one the metadata lists


def test_alibaba_release_is_delete_instance_forced(serve: Any) -> None:
    fake = Fake("alicloud")
    serve(fake).act("release")
    [call] = fake.calls
    assert call["headers"]["x-acs-action"] == "DeleteInstance"
    assert call["query"] == {"InstanceId": "i-bp67acfmxazb4ph", "Force": "true"}
    assert call["headers"]["authorization"] == alibaba_sdk_authorization(call, "sts-secret-ali")


def tencent_sdk_signature(call: dict[str, Any]) -> str:
    from tencentcloud.common.sign import Sign

    headers = call["headers"]
    canonical = "\n".join(["POST", "/", "", f"content-type:{headers['content-type']}\nhost:{headers['host']}\n",
                           "content-type;host", hashlib.sha256(call["body"]).hexdigest()])
    date = "2025-12-01"
    to_sign = "\n".join(["TC3-HMAC-SHA256", headers["x-tc-timestamp"], f"{date}/cvm/tc3_request",
                         hashlib.sha256(canonical.encode()).hexdigest()])
    return str(Sign.sign_tc3("tmp-secret-tc", date, "cvm", to_sign))


@pytest.mark.parametrize(("action", "name", "params"), [
    ("stop", "StopInstances", {"InstanceIds": ["ins-r8hr2upy"], "StopType": "SOFT_FIRST",
                               "StoppedMode": "STOP_CHARGING"}),
    ("release", "TerminateInstances", {"InstanceIds": ["ins-r8hr2upy"]}),
])
def test_tencent_calls_are_tc3_signed_with_the_cam_role_token(serve: Any, action: str, name: str,
                                                              params: dict[str, Any]) -> None:
    fake = Fake("tencentcloud")
    assert serve(fake).act(action) != ""
    [call] = fake.calls
    assert json.loads(call["body"]) == params
    headers = call["headers"]
    assert headers["x-tc-action"] == name
    assert headers["x-tc-version"] == "2017-03-12"
    assert headers["x-tc-region"] == "ap-shanghai"
    assert headers["x-tc-token"] == "tc-token-xyz"
    assert headers["x-tc-timestamp"] == "1764583200"
    assert headers["authorization"] == (
        "TC3-HMAC-SHA256 Credential=AKIDtmp123/2025-12-01/cvm/tc3_request, SignedHeaders=content-type;host, "
        f"Signature={tencent_sdk_signature(call)}")


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_an_api_refusal_is_a_cloud_error_naming_the_code(serve: Any, cloud: str) -> None:
    fake = Fake(cloud, api_error=True)
    with pytest.raises(agent_module.CloudError, match=r"Forbidden\.RAM|UnauthorizedOperation"):
        serve(fake).act("stop")


@pytest.mark.parametrize(("cloud", "path"), [("alicloud", "instance/spot/termination-time"),
                                             ("tencentcloud", "spot/termination-time")])
def test_the_spot_watch_reads_each_clouds_documented_path(serve: Any, cloud: str, path: str) -> None:
    fake = Fake(cloud)
    watcher = serve(fake)
    assert watcher.termination_time() is None  # 404: no notice
    fake.notice = "2025-12-01T10:02:00Z"
    assert watcher.termination_time() == "2025-12-01T10:02:00Z"
    assert fake.metadata_reads == [path, path]


def test_an_unreachable_metadata_service_is_a_cloud_error() -> None:
    config = agent_module.Config(cloud="alicloud", metadata_url="http://127.0.0.1:9/latest/meta-data/")
    with pytest.raises(agent_module.CloudError, match=r"GET http://127\.0\.0\.1:9/latest/meta-data/instance/spot"):
        agent_module.Cloud(config, agent_module.Http()).termination_time()


def test_tencent_reads_its_own_state_with_a_signed_describe_instances(serve: Any) -> None:
    fake = Fake("tencentcloud")
    state = serve(fake).stop_state()
    assert state == {"InstanceState": "STOPPING", "LatestOperation": "StopInstances",
                     "LatestOperationState": "OPERATING", "StopChargingMode": "NOT_APPLICABLE"}
    [call] = fake.calls
    assert call["headers"]["x-tc-action"] == "DescribeInstances"
    assert json.loads(call["body"]) == {"InstanceIds": ["ins-r8hr2upy"]}
    assert call["headers"]["authorization"] == (
        "TC3-HMAC-SHA256 Credential=AKIDtmp123/2025-12-01/cvm/tc3_request, SignedHeaders=content-type;host, "
        f"Signature={tencent_sdk_signature(call)}")


def test_tencent_no_charge_stop_refusal_carries_its_code(serve: Any) -> None:
    fake = Fake("tencentcloud", tc_error_code="UnsupportedOperation.StoppedModeStopCharging")
    with pytest.raises(agent_module.CloudError) as caught:
        serve(fake).act("stop")
    assert caught.value.code == "UnsupportedOperation.StoppedModeStopCharging"
