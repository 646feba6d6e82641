"""The lifecycle agent against the fake cloud APIs (tests/fake_cloud/) under the instance role's own
policy, as roles.py builds it: it may stop and release its own instance, and the cloud refuses the
same call on an instance of another cluster (its tags do not carry this cluster's id).

The metadata service is a small one here (instance id, region, the role's STS credentials); the
API is the fake, which checks the agent's signature and security token and decides the request
against the policy with toolkit.providers.policy, on the instance and its tags.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.fake_cloud import alibaba, tencent
from tests.lifecycle.agent import load_agent
from toolkit.providers.alicloud.args import InstanceRoleArgs as AliRoleArgs
from toolkit.providers.alicloud.roles import node_policy as ali_node_policy
from toolkit.providers.policy import parse
from toolkit.providers.tencentcloud.args import InstanceRoleArgs as TcRoleArgs
from toolkit.providers.tencentcloud.roles import node_policy as tc_node_policy

pytestmark = pytest.mark.fake_cloud
agent_module = load_agent()

ROLE = "gpuctl-demo-5e1f0c2a9b3d-node"
CLUSTER_ID = "5e1f0c2a9b3d"
STS = {"alicloud": ("STS.NUgYrLnoC37mZZCNnAbez", "sts-secret-ali-000000000000", "CAIS-token-ali"),
       "tencentcloud": ("AKIDtmp1234567890123456789012345678", "tmp-secret-tc-0000000000000", "tc-token-xyz")}
TAGS = {"gpuctl:cluster": "demo", "gpuctl:cluster-id": CLUSTER_ID, "gpuctl:managed-by": "gpuctl"}


def metadata_server(cloud: str, instance: str) -> ThreadingHTTPServer:
    key, secret, token = STS[cloud]
    prefix = "ram" if cloud == "alicloud" else "cam"
    creds = ({"AccessKeyId": key, "AccessKeySecret": secret, "SecurityToken": token, "Code": "Success"}
             if cloud == "alicloud" else {"TmpSecretId": key, "TmpSecretKey": secret, "Token": token})
    answers = {"instance-id": instance, "region-id": "cn-beijing", "placement/region": "ap-shanghai",
               f"{prefix}/security-credentials/": ROLE, f"{prefix}/security-credentials/{ROLE}": json.dumps(creds)}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.removeprefix("/latest/meta-data/")
            status, body = (200, answers[path].encode()) if path in answers else (404, b"")
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self) -> None:  # no hardened mode: the agent then reads without a token
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def alibaba_instance(id_: str, tags: dict[str, str]) -> dict[str, Any]:
    return {"InstanceId": id_, "RegionId": "cn-beijing", "Status": "Running",
            "Tags": {"Tag": [{"TagKey": k, "TagValue": v} for k, v in tags.items()]}}


def tencent_instance(id_: str, tags: dict[str, str]) -> dict[str, Any]:
    return {"InstanceId": id_, "Placement": {"Zone": "ap-shanghai-5"}, "InstanceState": "RUNNING",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


@pytest.fixture
def agent_on() -> Iterator[Any]:
    """agent_on(cloud, instance id, the instances the cloud holds) -> (the agent's Cloud, the fake)."""
    servers: list[Any] = []
    contexts: list[Any] = []

    def start(cloud: str, instance: str, held: dict[str, dict[str, str]]) -> tuple[Any, Any]:
        key, secret, token = STS[cloud]
        fake: Any
        if cloud == "alicloud":
            fake = alibaba.FakeAlibabaCloud(keys={key: secret}, tokens={key: token},
                                            instances=[alibaba_instance(i, t) for i, t in held.items()])
            document = ali_node_policy(AliRoleArgs(name=ROLE, cluster_id=CLUSTER_ID, stop_instances=True))
            context = alibaba.serve(fake)
        else:
            fake = tencent.FakeTencentCloud(keys={key: secret}, tokens={key: token},
                                            instances=[tencent_instance(i, t) for i, t in held.items()])
            document = tc_node_policy(TcRoleArgs(name=ROLE, cluster_id=CLUSTER_ID, stop_instances=True),
                                      region="ap-shanghai", app_id=None)
            context = tencent.serve(fake)
        fake.policies[key] = [parse(document, "alicloud" if cloud == "alicloud" else "tencentcloud", name=ROLE)]
        url = context.__enter__()
        contexts.append(context)
        server = metadata_server(cloud, instance)
        servers.append(server)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        config = agent_module.Config(cloud=cloud, metadata_url=base + "/latest/meta-data/",
                                     metadata_token_url=base + "/latest/api/token" if cloud == "alicloud" else "",
                                     api_endpoint=url, idle_seconds=600)
        return agent_module.Cloud(config, agent_module.Http()), fake

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
    for context in contexts:
        context.__exit__(None, None, None)


@pytest.mark.parametrize(("cloud", "instance"), [("alicloud", "i-bp67acfmxazb4ph"), ("tencentcloud", "ins-r8hr2upy")])
@pytest.mark.parametrize("action", ["stop", "release"])
def test_the_agent_may_stop_and_release_its_own_instance(agent_on: Any, cloud: str, instance: str,
                                                         action: str) -> None:
    agent, fake = agent_on(cloud, instance, {instance: TAGS})
    assert agent.act(action) != ""
    assert [c.answered for c in fake.calls] == ["ok"]


@pytest.mark.parametrize(("cloud", "instance", "refusal"), [
    ("alicloud", "i-bp67acfmxazb4ph", "Forbidden.RAM"),
    ("tencentcloud", "ins-r8hr2upy", "AuthFailure.UnauthorizedOperation"),
])
def test_another_clusters_instance_is_refused_by_the_cloud(agent_on: Any, cloud: str, instance: str,
                                                           refusal: str) -> None:
    # The metadata says this instance; its tags are another cluster's: the role may not touch it.
    agent, fake = agent_on(cloud, instance, {instance: {**TAGS, "gpuctl:cluster-id": "0123456789ab"}})
    with pytest.raises(agent_module.CloudError, match=refusal):
        agent.act("release")
    assert [c.answered for c in fake.calls] == [refusal]
    assert len(fake.instances) == 1
