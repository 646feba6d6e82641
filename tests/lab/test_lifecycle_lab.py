"""The lifecycle agent on a lab node, against a fake metadata service and a fake ECS API.

The fakes listen on the host's address on the lab's management bridge, the one address a lab
node reaches (nothing is routed out). `gpuctl up` installs the agent through the site playbook
(the spec sets idle_stop_minutes and on_interruption); the test then runs the lifecycle role
again with the lab-only overrides (20 s of idleness instead of the spec's minimum of 10 minutes,
checks every 2 s, the fakes' address), replays the GPU utilisation busy then idle, and sees the
stop call arrive after the idle period and not before; then it posts a spot termination notice
and sees the interruption command run once, with the time left and the checkpoint directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from toolkit.paths import Paths

pytestmark = pytest.mark.lab
NAME = "lifeci"
IDLE_SECONDS = 20
CHECK_SECONDS = 2
HOOK_LOG = "/var/tmp/gpuctl-hook.log"
SPEC = f"""\
name: {NAME}
provider: local
node_pools:
  - name: n
    instance_type: lab
    count: 1
    image: debian_12
    capture: @bundle@
network:
  fabric: tcp
  mtu: 8500
  admin_cidr: 127.0.0.0/8
lifecycle:
  ttl: 2h
  idle_stop_minutes: 10
  on_interruption: 'echo "$GPUCTL_TERMINATION_TIME $GPUCTL_SECONDS_LEFT ${{GPUCTL_CHECKPOINT_DIR:-none}}" >> {HOOK_LOG}'
"""


def gpuctl(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@dataclass
class FakeCloud:
    notice: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def metadata(self, path: str) -> tuple[int, str]:
        answers = {
            "instance-id": "i-lifeci0", "region-id": "cn-lab",
            "ram/security-credentials/": "gpuctl-lifeci-node",
            "ram/security-credentials/gpuctl-lifeci-node": json.dumps({
                "AccessKeyId": "STS.lab", "AccessKeySecret": "lab-secret", "SecurityToken": "lab-sts-token",
                "Expiration": "2099-01-01T00:00:00Z", "Code": "Success"}),
        }
        if path == "instance/spot/termination-time":
            return (404, "") if self.notice is None else (200, self.notice)
        return (200, answers[path]) if path in answers else (404, "")


def handler(fake: FakeCloud) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def answer(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self) -> None:
            self.answer(200, "lab-md-token")

        def do_GET(self) -> None:
            if self.headers.get("X-aliyun-ecs-metadata-token") != "lab-md-token":
                self.answer(401, "")
                return
            self.answer(*fake.metadata(self.path.removeprefix("/latest/meta-data/")))

        def do_POST(self) -> None:
            split = urllib.parse.urlsplit(self.path)
            fake.calls.append({"at": time.monotonic(), "query": dict(urllib.parse.parse_qsl(split.query)),
                               "headers": {k.lower(): v for k, v in self.headers.items()}})
            self.answer(200, json.dumps({"RequestId": "LAB-REQUEST-1"}))

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("spec") / f"{NAME}.yaml"
    path.write_text(SPEC.replace("@bundle@", str(replay_bundle)))
    try:
        gpuctl("up", path)
        yield path
    finally:
        gpuctl("down", path, check=False)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
        from toolkit.providers.lab.state import lab_tag

        assert lab_tag(NAME) not in left


@pytest.fixture(scope="module")
def fake(spec_path: Path) -> Iterator[tuple[FakeCloud, str]]:
    from toolkit.providers.lab.state import load

    state = load(NAME)
    assert state is not None
    address = state.host_mgmt_ip.split("/")[0]
    cloud = FakeCloud()
    server = ThreadingHTTPServer((address, 0), handler(cloud))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield cloud, f"http://{address}:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def on_node(spec_path: Path, script: str) -> str:
    # One argument: ssh hands the command line to the node's login shell as it is.
    return gpuctl("ssh", spec_path, "0", "--", script).stdout


def run_role(endpoint: str, tmp_path: Path) -> None:
    paths = Paths.of(NAME)
    playbook = tmp_path / "lifecycle.yml"
    playbook.write_text("- hosts: gpuctl_nodes\n  gather_facts: false\n  roles: [lifecycle]\n")
    extra = {"lifecycle_lab_endpoint": endpoint, "lifecycle_lab_idle_seconds": IDLE_SECONDS,
             "lifecycle_check_seconds": CHECK_SECONDS, "lifecycle_warn_seconds": 6,
             "lifecycle_spot_poll_seconds": 1, "lifecycle_checkpoint_dir": "/mnt/ckpt"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(paths.inventory), str(playbook),
         "-e", json.dumps(extra)],
        cwd=paths.base, env={**os.environ, "ANSIBLE_CONFIG": str(paths.config)},
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def wait_for(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_configure_installed_the_agent_from_the_spec(spec_path: Path) -> None:
    config = json.loads(on_node(spec_path, "cat /etc/gpuctl/lifecycle.json"))
    assert config["idle_seconds"] == 600
    assert config["on_interruption"].startswith('echo "$GPUCTL_TERMINATION_TIME')
    assert config["utilisation_file"] == "/etc/gpuctl/lab-utilisation"
    assert on_node(spec_path, "stat -c %a /etc/gpuctl/lifecycle.json").strip() == "600"
    log = on_node(spec_path, "cat /var/log/gpuctl-lifecycle.log")
    assert "gpuctl-lifecycle: start: alicloud: stop after 600 s idle" in log


@pytest.mark.slow  # 42 s of idle period; make test-slow
def test_the_stop_arrives_after_the_idle_period_and_the_hook_runs_once(
        spec_path: Path, fake: tuple[FakeCloud, str], tmp_path: Path) -> None:
    cloud, endpoint = fake
    on_node(spec_path, f"echo 95 > /etc/gpuctl/lab-utilisation; rm -f {HOOK_LOG}")
    run_role(endpoint, tmp_path)
    time.sleep(IDLE_SECONDS / 2)
    assert cloud.calls == []  # busy: no stop
    on_node(spec_path, "echo 0 > /etc/gpuctl/lab-utilisation")
    idle_from = time.monotonic()
    assert wait_for(lambda: cloud.calls, IDLE_SECONDS + 30), "no stop call arrived"
    waited = cloud.calls[0]["at"] - idle_from
    assert IDLE_SECONDS - CHECK_SECONDS <= waited <= IDLE_SECONDS + 3 * CHECK_SECONDS + 5, waited
    [call] = cloud.calls
    assert call["query"] == {"InstanceId": "i-lifeci0", "StoppedMode": "StopCharging"}
    assert call["headers"]["x-acs-action"] == "StopInstance"
    assert call["headers"]["x-acs-security-token"] == "lab-sts-token"
    assert call["headers"]["authorization"].startswith("ACS3-HMAC-SHA256 Credential=STS.lab,")
    log = on_node(spec_path, "cat /var/log/gpuctl-lifecycle.log")
    assert log.index("gpuctl-lifecycle: announce:") < log.index("gpuctl-lifecycle: stop: idle for")
    assert "gpuctl-lifecycle: stop-requested: the cloud accepted the stop (request LAB-REQUEST-1)" in log

    notice_at = time.time() + 120
    cloud.notice = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(notice_at))
    hook_log = f"cat {HOOK_LOG} 2>/dev/null || true"  # not written yet: an empty answer
    assert wait_for(lambda: on_node(spec_path, hook_log).strip(), 20), "the hook did not run"
    time.sleep(3)  # several more polls: it must not run again
    lines = on_node(spec_path, f"cat {HOOK_LOG}").strip().splitlines()
    assert len(lines) == 1, lines
    when, left, checkpoint = lines[0].split()
    assert when == cloud.notice
    assert 100 <= int(left) <= 120
    assert checkpoint == "/mnt/ckpt"
    assert len(cloud.calls) == 1  # still one stop
