"""gpuctl's direct Tencent Cloud calls (sdk.py, preflight.py, leftovers.py) against the fake API on loopback.

The real SDK signs and sends every request; the fake (tests/fake_cloud/tencent.py) checks the
TC3-HMAC-SHA256 signature and answers with the API's own shapes and error codes.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_cloud.tencent import FakeTencentCloud, Fault, serve, sign, string_to_sign
from toolkit.errors import EXIT_CATALOG, EXIT_PROVIDER, CatalogError, MissingToolError, UsageError
from toolkit.providers.tencentcloud.leftovers import find_leftovers
from toolkit.providers.tencentcloud.preflight import preflight, run_checks
from toolkit.providers.tencentcloud.sdk import (
    ENDPOINT_ENV,
    ApiError,
    RetryPolicy,
    TencentApi,
    connect,
    describe_error,
    load_credentials,
    override_endpoint,
)
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.fake_cloud

SECRET_ID = "AKIDgpuctlTEST0000000000000000000001"
SECRET_KEY = "gpuctlFakeSecretKey0000000000000001"
REGION = "ap-shanghai"
ZONE = "ap-shanghai-5"
CLUSTER = "hcc-v100"
CLUSTER_ID = "0123456789ab"
HCC = "HCCG5v.24XLARGE384"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Loopback only, whatever the machine's proxy settings.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cloud() -> FakeTencentCloud:
    return FakeTencentCloud(keys={SECRET_ID: SECRET_KEY})


@pytest.fixture
def endpoint(cloud: FakeTencentCloud) -> Iterator[str]:
    with serve(cloud) as url:
        yield url


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def env_for(endpoint: str, secret_id: str = SECRET_ID, secret_key: str = SECRET_KEY, **more: str) -> dict[str, str]:
    return {"TENCENTCLOUD_SECRET_ID": secret_id, "TENCENTCLOUD_SECRET_KEY": secret_key, ENDPOINT_ENV: endpoint, **more}


def make_api(endpoint: str, sleeps: Sleeps, *, tries: int = 4, timeout_s: float = 5.0, **env: str) -> TencentApi:
    return connect(REGION, env=env_for(endpoint, **env), timeout_s=timeout_s,
                   retry=RetryPolicy(tries=tries, base_s=0.5, cap_s=4.0), sleep=sleeps)


def tags(**pairs: str) -> list[dict[str, str]]:
    return [{"Key": key.replace("__", ":").replace("_", "-"), "Value": value} for key, value in pairs.items()]


def cluster_tags(cluster: str = CLUSTER, cluster_id: str | None = CLUSTER_ID) -> list[dict[str, str]]:
    found = [{"Key": "gpuctl:cluster", "Value": cluster}, {"Key": "gpuctl:owner", "Value": "infra-team"}]
    if cluster_id is not None:
        found.append({"Key": "gpuctl:cluster-id", "Value": cluster_id})
    return found


def instance(id_: str, name: str, tag_list: list[dict[str, str]], zone: str = ZONE) -> dict[str, Any]:
    return {"InstanceId": id_, "InstanceName": name, "InstanceType": HCC, "Placement": {"Zone": zone},
            "InstanceState": "RUNNING", "InstanceChargeType": "POSTPAID_BY_HOUR", "Tags": tag_list}


def offer(zone: str, status: str = "SELL", stock: str = "EnoughStock", charge: str = "POSTPAID_BY_HOUR",
          itype: str = "HCCG5v.24XLARGE384", cpu: int = 96) -> dict[str, Any]:
    return {"Zone": zone, "InstanceType": itype, "InstanceChargeType": charge, "InstanceFamily": "HCCG5v",
            "Cpu": cpu, "Memory": 768, "Gpu": 8, "GpuCount": 8, "Status": status, "StatusCategory": stock,
            "SoldOutReason": "" if status == "SELL" else "Resources are sold out",
            "Price": {"UnitPrice": 100.0, "ChargeUnit": "HOUR"}, "NetworkCard": 100, "Externals": {}}


def quota(remaining: int = 10, spot_remaining: int = 1000) -> dict[str, Any]:
    return {
        "PostPaidQuotaSet": [{"Zone": ZONE, "TotalQuota": 30, "UsedQuota": 30 - remaining,
                              "RemainingQuota": remaining}],
        "PrePaidQuotaSet": [{"Zone": ZONE, "TotalQuota": 150, "UsedQuota": 0, "RemainingQuota": 150, "OnceQuota": 100}],
        "SpotPaidQuotaSet": [{"Zone": ZONE, "TotalQuota": 1000, "UsedQuota": 1000 - spot_remaining,
                              "RemainingQuota": spot_remaining}],
        "ImageQuotaSet": [], "DisasterRecoverGroupQuotaSet": [],
    }


def spec(mode: str = "pay_as_you_go", count: int = 2, fabric: str = "rdma", itype: str = "HCCG5v.24XLARGE384",
         image: str = "ubuntu_22_04") -> ClusterSpec:
    return ClusterSpec.model_validate({
        "name": CLUSTER, "provider": "tencentcloud", "region": REGION, "zone": ZONE,
        "node_pools": [{"name": "gpu", "instance_type": itype, "count": count, "image": image,
                        "system_disk": {"size_gb": 500, "category": "CLOUD_BSSD"}, "billing": {"mode": mode}}],
        "network": {"fabric": fabric, "admin_cidr": "203.0.113.0/24"},
        "ssh": {"public_key": "ssh/example.pub"},
        "lifecycle": {"ttl": "8h"},
    })


# --- Signature and credentials ------------------------------------------------------------------------


def test_a_signed_call_is_accepted_and_answered_in_the_api_shape(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.instances.append(instance("ins-aaaa1111", "hcc-v100-gpu-0", cluster_tags()))
    api = make_api(endpoint, sleeps)
    response = api.call("cvm", "DescribeInstances", {"Limit": 20})
    assert response["TotalCount"] == 1
    assert response["InstanceSet"][0]["InstanceId"] == "ins-aaaa1111"
    assert "RequestId" in response
    assert [(c.service, c.action, c.region, c.answered) for c in cloud.calls] == [
        ("cvm", "DescribeInstances", REGION, "ok")]


def test_a_wrong_secret_key_is_refused_by_the_fake(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    wrong_key = "gpuctlWrongSecretKey00000000000000002"
    api = make_api(endpoint, sleeps, secret_key=wrong_key)
    with pytest.raises(ApiError) as caught:
        api.call("cvm", "DescribeInstances", {})
    assert caught.value.code == "AuthFailure.SignatureFailure"
    assert caught.value.exit_code == EXIT_PROVIDER
    text = str(caught.value)
    assert "Tencent Cloud refused the credentials (AuthFailure.SignatureFailure)" in text
    assert "TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY" in text
    assert wrong_key not in text
    assert SECRET_ID not in text
    assert sleeps == []  # an auth failure is not retried
    assert [c.answered for c in cloud.calls] == ["AuthFailure.SignatureFailure"]


def test_an_unknown_secret_id_is_refused(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    unknown = "AKIDgpuctlUNKNOWN000000000000000009"
    with pytest.raises(ApiError) as caught:
        make_api(endpoint, sleeps, secret_id=unknown).call("vpc", "DescribeVpcs", {})
    assert caught.value.code == "AuthFailure.SecretIdNotFound"
    assert "the SecretId is not a valid, enabled Tencent Cloud API key" in str(caught.value)
    assert unknown not in str(caught.value)


def test_the_fake_checks_the_documented_signature_not_the_sdk(cloud: FakeTencentCloud, endpoint: str) -> None:
    """Hand-signed requests: the documented algorithm passes; the same signature over another body fails."""
    host = endpoint.removeprefix("http://")
    timestamp = str(int(time.time()))
    date = datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%d")
    body = json.dumps({"Limit": 1}).encode()
    headers = {"content-type": "application/json", "host": host}
    to_sign = string_to_sign("POST", "/", "", headers, ["content-type", "host"], body, timestamp,
                             f"{date}/vpc/tc3_request")
    signature = sign(SECRET_KEY, date, "vpc", to_sign)
    assert len(signature) == 64
    assert to_sign.endswith(
        hashlib.sha256(f"POST\n/\n\ncontent-type:application/json\nhost:{host}\n\ncontent-type;host\n"
                       f"{hashlib.sha256(body).hexdigest()}".encode()).hexdigest())

    def send(payload: bytes) -> dict[str, Any]:
        request = urllib.request.Request(endpoint + "/", data=payload, method="POST", headers={
            "Content-Type": "application/json", "Host": host, "X-TC-Action": "DescribeVpcs",
            "X-TC-Timestamp": timestamp, "X-TC-Version": "2017-03-12", "X-TC-Region": REGION,
            "Authorization": f"TC3-HMAC-SHA256 Credential={SECRET_ID}/{date}/vpc/tc3_request, "
                             f"SignedHeaders=content-type;host, Signature={signature}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=5) as answer:
            result: dict[str, Any] = json.loads(answer.read())["Response"]
            return result

    assert send(body)["TotalCount"] == 0
    assert send(json.dumps({"Limit": 2}).encode())["Error"]["Code"] == "AuthFailure.SignatureFailure"


def test_a_security_token_is_sent_when_set(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.tokens[SECRET_ID] = "gpuctlFakeSessionToken000000000000003"
    with pytest.raises(ApiError) as caught:
        make_api(endpoint, sleeps).call("cvm", "DescribeKeyPairs", {})
    assert caught.value.code == "AuthFailure.TokenFailure"
    api = make_api(endpoint, sleeps, TENCENTCLOUD_SECURITY_TOKEN="gpuctlFakeSessionToken000000000000003")
    assert api.call("cvm", "DescribeKeyPairs", {})["TotalCount"] == 0


def test_an_error_message_echoing_the_credentials_is_scrubbed(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.faults.append(Fault("DescribeInstances", "AuthFailure.UnauthorizedOperation",
                              f"key {SECRET_ID} with secret {SECRET_KEY} may not DescribeInstances"))
    with pytest.raises(ApiError) as caught:
        make_api(endpoint, sleeps).call("cvm", "DescribeInstances", {})
    text = str(caught.value)
    assert SECRET_ID not in text
    assert SECRET_KEY not in text
    assert "the key may not call DescribeInstances (CAM)" in text
    assert "<TENCENTCLOUD_SECRET_ID>" in caught.value.api_message
    assert "<TENCENTCLOUD_SECRET_KEY>" in caught.value.api_message


def test_credentials_come_from_the_tccli_profile_when_the_environment_has_none(tmp_path: Path) -> None:
    (tmp_path / "team.credential").write_text(json.dumps({"secretId": SECRET_ID, "secretKey": SECRET_KEY}))
    found = load_credentials({"TENCENTCLOUD_PROFILE": "team", "TENCENTCLOUD_SHARED_CREDENTIALS_DIR": str(tmp_path)})
    assert (found.secret_id, found.secret_key, found.token) == (SECRET_ID, SECRET_KEY, None)
    assert found.source == str(tmp_path / "team.credential")
    assert SECRET_KEY not in repr(found)


@pytest.mark.parametrize(("make", "words"), [
    (lambda path: os.mkfifo(path), "is a named pipe (FIFO), not a regular file"),
    (lambda path: path.write_text('{"secretId": ' + "[" * 100_000 + "]" * 100_000 + "}"), "is far too large"),
    (lambda path: path.write_text('{"secretId": ' + "[" * 20_000 + "]" * 20_000 + "}"), ": RecursionError"),
])
def test_a_tccli_profile_that_is_no_profile_is_a_clean_exit_7(make: Any, words: str, tmp_path: Path) -> None:
    make(tmp_path / "default.credential")
    with pytest.raises(MissingToolError) as caught:  # neither blocks on the FIFO nor escapes as a bug
        load_credentials({"TENCENTCLOUD_SHARED_CREDENTIALS_DIR": str(tmp_path)})
    assert str(caught.value).startswith(f"cannot read the tccli profile {tmp_path / 'default.credential'}")
    assert words in str(caught.value)
    assert caught.value.credentials is True


def test_missing_or_broken_credentials_say_how_to_set_them_without_echoing_them(tmp_path: Path) -> None:
    with pytest.raises(MissingToolError) as caught:
        load_credentials({}, home=tmp_path)
    assert f"{tmp_path}/.tccli/default.credential does not exist" in str(caught.value)
    assert "tccli configure" in str(caught.value)
    (tmp_path / "default.credential").write_text('{"secretId": "' + SECRET_ID + '", "secretKey": ')
    with pytest.raises(MissingToolError) as caught:
        load_credentials({"TENCENTCLOUD_SHARED_CREDENTIALS_DIR": str(tmp_path)})
    assert "JSONDecodeError" in str(caught.value)
    assert SECRET_ID not in str(caught.value)
    with pytest.raises(MissingToolError, match="TENCENTCLOUD_SECRET_KEY is empty"):
        load_credentials({"TENCENTCLOUD_SECRET_ID": SECRET_ID})


@pytest.mark.parametrize("value", ["https://cvm.tencentcloudapi.com", "http://10.0.0.1:8080", "http://127.0.0.1",
                                   "http://127.0.0.1:80/api", "ftp://127.0.0.1:21"])
def test_the_test_endpoint_is_loopback_only(value: str) -> None:
    with pytest.raises(UsageError, match="is not a loopback test endpoint"):
        override_endpoint({ENDPOINT_ENV: value})


def test_the_test_endpoint_override_reads_host_and_port() -> None:
    assert override_endpoint({ENDPOINT_ENV: "http://127.0.0.1:40123"}) == "127.0.0.1:40123"
    assert override_endpoint({}) is None


# --- Retries and timeouts -------------------------------------------------------------------------------


def test_throttling_is_retried_with_backoff_then_succeeds(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.faults.append(Fault("DescribeInstances", "RequestLimitExceeded", "Your current request times exceeds "
                              "the limit.", times=2))
    response = make_api(endpoint, sleeps).call("cvm", "DescribeInstances", {})
    assert response["TotalCount"] == 0
    assert [c.answered for c in cloud.calls] == ["RequestLimitExceeded", "RequestLimitExceeded", "ok"]
    # Full jitter: try n waits between 0 and min(4, 0.5 * 2**n).
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 0.5
    assert 0 <= sleeps[1] <= 1.0


def test_throttling_forever_stops_after_bounded_tries_with_a_clear_error(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.faults.append(Fault("*", "RequestLimitExceeded.UinLimitExceeded", "too many requests", times=100))
    with pytest.raises(ApiError) as caught:
        make_api(endpoint, sleeps, tries=4).call("vpc", "DescribeSubnets", {})
    assert caught.value.code == "RequestLimitExceeded.UinLimitExceeded"
    assert str(caught.value).startswith("DescribeSubnets was throttled by Tencent Cloud "
                                        "(RequestLimitExceeded.UinLimitExceeded) on every try after 4 tries")
    assert "wait a minute" in str(caught.value)
    assert len(cloud.calls) == 4
    assert len(sleeps) == 3
    assert all(0 <= s <= 4.0 for s in sleeps)


def test_internal_errors_are_retried_too(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.faults.append(Fault("DescribeVpcs", "InternalError", "internal error", times=1))
    assert make_api(endpoint, sleeps).call("vpc", "DescribeVpcs", {})["TotalCount"] == 0
    assert len(sleeps) == 1


def test_a_call_that_could_buy_is_never_retried(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.faults.append(Fault("RunInstances", "RequestLimitExceeded", "too many requests", times=5))
    with pytest.raises(ApiError) as caught:
        make_api(endpoint, sleeps).call("cvm", "RunInstances", {"InstanceType": "HCCG5v.24XLARGE384"})
    assert caught.value.code == "RequestLimitExceeded"
    assert len(cloud.calls) == 1
    assert sleeps == []


def test_a_timeout_is_retried_then_reported_clearly(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.faults.append(Fault("DescribeInstances", delay_s=1.5, times=2))
    started = time.monotonic()
    with pytest.raises(ApiError) as caught:
        make_api(endpoint, sleeps, tries=2, timeout_s=0.3).call("cvm", "DescribeInstances", {})
    assert time.monotonic() - started < 1.5  # the client gave up, it did not wait for the answers
    assert caught.value.code == "ClientNetworkError"
    text = str(caught.value)
    assert text.startswith("DescribeInstances: Tencent Cloud did not answer (ClientNetworkError)")
    assert "(timeout 0.3s per try) after 2 tries" in text
    assert "HTTPS_PROXY" in text
    assert len(sleeps) == 1


# --- Error text ------------------------------------------------------------------------------------------


def test_error_codes_map_to_what_to_do() -> None:
    what, hint = describe_error("InvalidParameterValue.InstanceTypeNotFound",
                                "The specified parameter `InstanceType` value HCCG5x is not found.",
                                {"action": "RunInstances"})
    assert what.startswith("RunInstances: parameter InstanceType was refused "
                           "(InvalidParameterValue.InstanceTypeNotFound)")
    assert hint == "check the spec value that sets it (instance type, image, zone, disk category)"
    what, hint = describe_error("LimitExceeded.HpcClusterQuota", "quota reached", {"action": "CreateHpcCluster"})
    assert what == "CreateHpcCluster exceeds the number of HPC clusters (LimitExceeded.HpcClusterQuota): quota reached"
    assert hint is not None
    assert "https://console.cloud.tencent.com/cvm/quota" in hint
    what, _ = describe_error("ResourcesSoldOut.SpecifiedInstanceType", "sold out",
                             {"zone": ZONE, "instance_type": "HCCG5v.24XLARGE384", "sold_in": "ap-shanghai-2"})
    assert what == ("HCCG5v.24XLARGE384 in ap-shanghai-5 is sold out (ResourcesSoldOut.SpecifiedInstanceType); "
                    "sold now in: ap-shanghai-2")


# --- Preflight -------------------------------------------------------------------------------------------


def test_preflight_passes_when_sold_with_stock_and_quota(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.offers += [offer(ZONE), offer("ap-shanghai-2")]
    cloud.quota = quota(remaining=10)
    cloud.hcc_types = frozenset({HCC})
    cloud.hpc_clusters.append({"HpcClusterId": "hpc-aaaa1111", "Name": "other-team", "Zone": ZONE, "Remark": "",
                               "HpcClusterType": "STANDARD", "InstanceIds": [], "Tags": []})
    report = preflight(spec(), make_api(endpoint, sleeps), images={"gpu": "img-487zeit5"})
    assert report.problems == []
    assert report.notes == [
        "1 HPC cluster(s) exist in ap-shanghai-5; Tencent publishes no HPC cluster quota to check, so a full quota "
        "shows only when `up` creates one (LimitExceeded.HpcClusterQuota)"
    ]
    first = cloud.actions("DescribeZoneInstanceConfigInfos")[0].params
    assert first["Filters"] == [{"Name": "instance-type", "Values": [HCC]},
                                {"Name": "instance-charge-type", "Values": ["POSTPAID_BY_HOUR"]}]
    (dry_run,) = cloud.actions("RunInstances")
    assert dry_run.answered == "DryRunOperation"
    assert dry_run.params == {
        "Placement": {"Zone": ZONE}, "InstanceType": HCC, "InstanceChargeType": "POSTPAID_BY_HOUR",
        "ImageId": "img-487zeit5", "SystemDisk": {"DiskType": "CLOUD_BSSD", "DiskSize": 500}, "InstanceCount": 2,
        "DryRun": True, "HpcClusterId": "hpc-aaaa1111",
        "InternetAccessible": {"InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR", "InternetMaxBandwidthOut": 100,
                               "PublicIpAssigned": True},
    }


def test_preflight_sold_out_names_zone_type_and_where_it_is_sold(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.offers += [offer(ZONE, "SOLD_OUT", "WithoutStock"), offer("ap-shanghai-4"),
                     offer("ap-shanghai-2", stock="UnderStock"), offer("ap-shanghai-3", "SOLD_OUT", "WithoutStock")]
    cloud.quota = quota()
    with pytest.raises(CatalogError) as caught:
        preflight(spec(fabric="tcp"), make_api(endpoint, sleeps), images={"gpu": "img-487zeit5"})
    assert caught.value.exit_code == EXIT_CATALOG
    assert caught.value.problems == [
        "hcc-v100: 1 problem(s) on Tencent Cloud in ap-shanghai-5 before `up`:",
        "  - node pool gpu: HCCG5v.24XLARGE384 (pay_as_you_go, POSTPAID_BY_HOUR) is sold out in ap-shanghai-5 "
        "(Resources are sold out); sold now in: ap-shanghai-2, ap-shanghai-4",
    ]
    assert cloud.actions("RunInstances") == []  # a type not sold is not dry-run


def test_preflight_reports_every_problem_at_once(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.offers += [offer(ZONE)]
    cloud.quota = quota(remaining=1)
    cloud.hpc_clusters.append({"HpcClusterId": "hpc-aaaa1111", "Name": "other-team", "Zone": ZONE, "Remark": "",
                               "CvmQuotaTotal": 100, "CurrentNum": 4, "InstanceIds": [], "Tags": []})
    cloud.hcc_types = frozenset({HCC})
    cloud.dry_run_error = ("ResourceInsufficient.SpecifiedInstanceType", "The specified instance type is sold out.")
    report = run_checks(spec(), make_api(endpoint, sleeps), images={"gpu": "img-487zeit5"}, hpc_cluster_limit=1)
    assert report.problems == [
        "node pools gpu need 2 instances of POSTPAID_BY_HOUR in ap-shanghai-5, the account has 1 left (quota 30, "
        "used 29); raise it at https://console.cloud.tencent.com/cvm/quota or ask for fewer nodes",
        "1 HPC clusters already exist in ap-shanghai-5, the account's limit is 1: `up` needs one more for fabric rdma; "
        "delete an unused one (tccli cvm DeleteHpcClusters) or raise the quota",
        "node pool gpu: HCCG5v.24XLARGE384 in ap-shanghai-5 is sold out (ResourceInsufficient.SpecifiedInstanceType) "
        "(choose another zone or instance type in the spec, or try again later)",
    ]


def test_preflight_counts_spot_quota_in_vcpus(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.offers += [offer(ZONE, charge="SPOTPAID", cpu=96, itype="GT4.41XLARGE948")]
    cloud.quota = quota(spot_remaining=100)
    report = run_checks(spec(mode="spot", fabric="tcp", itype="GT4.41XLARGE948"), make_api(endpoint, sleeps),
                        images={"gpu": "img-487zeit5"})
    assert report.problems == [
        "node pools gpu need 192 vCPUs of SPOTPAID in ap-shanghai-5, the account has 100 left (quota 1000, used 900); "
        "raise it at https://console.cloud.tencent.com/cvm/quota or ask for fewer nodes",
    ]
    assert report.notes == []


def test_preflight_with_bad_credentials_stops_with_the_auth_error(endpoint: str, sleeps: Sleeps) -> None:
    with pytest.raises(ApiError) as caught:
        preflight(spec(), make_api(endpoint, sleeps, secret_key="gpuctlWrongSecretKey00000000000000002"))
    assert caught.value.code == "AuthFailure.SignatureFailure"
    assert "gpuctlWrongSecretKey" not in str(caught.value)


# --- The RunInstances dry run sends what the real create sends (issue 21, item 14) --------------------
#
# The RunInstances dry run of preflight sends what the real create sends (issue 21, item 14).
#
# Against the fake API (tests/fake_cloud/tencent.py), which refuses, as RunInstances does, an HCC type
# without HpcClusterId (InvalidParameterValue.InstanceTypeRequiredHpcCluster, SDK 3.1.178
# errorcodes.py:467-468) and an image id it does not hold. What the real create sends is
# tencentcloud_instance's request (terraform-provider-tencentcloud v1.82.42 resource_tc_instance.go:600-700):
# the image the images data source picks, HpcClusterId, InstanceMarketOptions with the lower-cased
# spot type and spot_max_price as gpuctl sets it (the spec's ceiling or the catalog's price).

UBUNTU = [
    {"ImageId": "img-old22040", "ImageName": "Ubuntu Server 22.04 LTS 64位", "ImageType": "PUBLIC_IMAGE",
     "CreatedTime": "2024-01-01T00:00:00Z"},
    {"ImageId": "img-new22040", "ImageName": "Ubuntu Server 22.04 LTS 64位", "ImageType": "PUBLIC_IMAGE",
     "CreatedTime": "2025-06-01T00:00:00Z"},
    {"ImageId": "img-uefi2204", "ImageName": "Ubuntu Server 22.04 LTS 64位 UEFI版", "ImageType": "PUBLIC_IMAGE",
     "CreatedTime": "2026-01-01T00:00:00Z"},
    {"ImageId": "img-private1", "ImageName": "Ubuntu Server 22.04 LTS 64位", "ImageType": "PRIVATE_IMAGE",
     "CreatedTime": "2026-02-01T00:00:00Z"},
]


def sold(cloud: FakeTencentCloud, itype: str, charge: str = "POSTPAID_BY_HOUR") -> None:
    cloud.offers.append(offer(ZONE, charge=charge, itype=itype))
    cloud.quota = quota()
    cloud.images = [dict(i) for i in UBUNTU]
    cloud.hcc_types = frozenset({HCC})


def dry_runs(cloud: FakeTencentCloud) -> list[tuple[dict[str, Any], str]]:
    return [(c.params, c.answered) for c in cloud.actions("RunInstances")]


def test_the_dry_run_runs_with_the_image_the_program_would_pick(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    sold(cloud, "GT4.41XLARGE948")
    report = run_checks(spec(fabric="tcp", itype="GT4.41XLARGE948"), make_api(endpoint, sleeps))
    assert report.problems == []
    [lookup] = cloud.actions("DescribeImages")
    assert lookup.params == {"Filters": [{"Name": "image-type", "Values": ["PUBLIC_IMAGE"]}],
                             "InstanceType": "GT4.41XLARGE948", "Offset": 0, "Limit": 100}
    [(params, answered)] = dry_runs(cloud)
    assert answered == "DryRunOperation"
    assert params["ImageId"] == "img-new22040"  # the newest match; the UEFI build does not match the alias
    assert "HpcClusterId" not in params  # not an HCC type


def test_an_hcc_pool_is_dry_run_in_an_hpc_cluster_of_the_zone(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    sold(cloud, HCC)
    cloud.hpc_clusters += [
        {"HpcClusterId": "hpc-zz999999", "Name": "b", "Zone": ZONE, "HpcClusterType": "STANDARD"},
        {"HpcClusterId": "hpc-cdc00001", "Name": "cdc", "Zone": ZONE, "HpcClusterType": "CDC"},
        {"HpcClusterId": "hpc-aa111111", "Name": "a", "Zone": ZONE, "HpcClusterType": "STANDARD"},
    ]
    report = run_checks(spec(), make_api(endpoint, sleeps))
    assert report.problems == []
    [(params, answered)] = dry_runs(cloud)
    assert answered == "DryRunOperation"
    assert params["HpcClusterId"] == "hpc-aa111111"  # a STANDARD one, the lowest id


def test_an_hcc_pool_without_an_hpc_cluster_in_the_zone_is_not_dry_run_and_says_why(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    sold(cloud, HCC)
    report = run_checks(spec(), make_api(endpoint, sleeps))
    assert report.problems == []
    assert dry_runs(cloud) == []
    assert report.notes[-1] == (
        "node pool gpu: no HPC cluster exists in ap-shanghai-5 yet (`up` creates one) and RunInstances refuses an "
        "HCC type without one (InvalidParameterValue.InstanceTypeRequiredHpcCluster), so its dry run is skipped")


def test_the_spot_dry_run_carries_the_ceiling_the_create_sets(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    sold(cloud, "GT4.41XLARGE948", charge="SPOTPAID")
    # No spot_max_price_per_hour: the program sets the catalog's pay-as-you-go price, 237.51 CNY/h.
    report = run_checks(spec(mode="spot", fabric="tcp", itype="GT4.41XLARGE948"), make_api(endpoint, sleeps))
    assert report.problems == []
    [(params, _)] = dry_runs(cloud)
    assert params["InstanceChargeType"] == "SPOTPAID"
    assert params["InstanceMarketOptions"] == {"MarketType": "spot",
                                               "SpotOptions": {"SpotInstanceType": "one-time", "MaxPrice": "237.51"}}


def test_no_matching_image_is_a_problem_before_anything_is_bought(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    sold(cloud, "GT4.41XLARGE948")
    cloud.images = [i for i in cloud.images if "UEFI" in i["ImageName"]]
    report = run_checks(spec(fabric="tcp", itype="GT4.41XLARGE948"), make_api(endpoint, sleeps))
    assert report.problems == [
        "node pool gpu: no public image matching ^Ubuntu Server 22\\.04 LTS 64(位|bit)$ for GT4.41XLARGE948 in "
        "ap-shanghai; set node_pools[gpu].image to an image id (img-...) from that region"]
    assert dry_runs(cloud) == []


# --- Leftovers -------------------------------------------------------------------------------------------


def populate(cloud: FakeTencentCloud) -> None:
    cloud.instances += [
        instance("ins-proven01", "hcc-v100-gpu-0", cluster_tags()),
        instance("ins-nameonly", "hcc-v100-gpu-1", cluster_tags(cluster_id=None)),
        instance("ins-otherid1", "hcc-v100-gpu-0", cluster_tags(cluster_id="ffffffffffff")),
        instance("ins-untagged", "hcc-v100-gpu-9", []),
        instance("ins-othername", "hcc-v200-gpu-0", cluster_tags(cluster="hcc-v200")),
    ]
    cloud.vpcs += [{"VpcId": "vpc-proven01", "VpcName": "hcc-v100-vpc", "CidrBlock": "10.43.0.0/16",
                    "TagSet": cluster_tags()},
                   {"VpcId": "vpc-other001", "VpcName": "default", "CidrBlock": "172.16.0.0/16", "TagSet": []}]
    cloud.subnets += [{"SubnetId": "subnet-proven1", "SubnetName": "hcc-v100-subnet", "VpcId": "vpc-proven01",
                       "Zone": ZONE, "TagSet": cluster_tags()}]
    cloud.security_groups += [{"SecurityGroupId": "sg-nameonly1", "SecurityGroupName": "hcc-v100-sg",
                               "TagSet": cluster_tags(cluster_id=None)}]
    cloud.key_pairs += [{"KeyId": "skey-proven1", "KeyName": "hcc_v100", "Tags": cluster_tags()}]
    # Named and remarked as the component does (args.hpc_cluster_name, component.py): no tags.
    cloud.hpc_clusters += [
        {"HpcClusterId": "hpc-proven01", "Name": "hcc-v100-0123456789ab", "Zone": ZONE,
         "Remark": "gpuctl cluster hcc-v100 (0123456789ab): HCC RDMA nodes", "Tags": []},
        {"HpcClusterId": "hpc-noid0001", "Name": "hcc-v100", "Zone": ZONE,
         "Remark": "gpuctl cluster hcc-v100 (no cluster id): HCC RDMA nodes", "Tags": []},
        {"HpcClusterId": "hpc-byname01", "Name": "hcc-v100-hcc-old", "Zone": ZONE, "Remark": "", "Tags": []},
        {"HpcClusterId": "hpc-otherid1", "Name": "hcc-v100-ffffffffffff", "Zone": ZONE, "Remark": "", "Tags": []},
        {"HpcClusterId": "hpc-otherbig", "Name": "hcc-v100-big-aaaaaaaaaaaa", "Zone": ZONE,
         "Remark": "gpuctl cluster hcc-v100-big (aaaaaaaaaaaa): HCC RDMA nodes", "Tags": []},
        {"HpcClusterId": "hpc-unrelate", "Name": "research", "Zone": ZONE, "Remark": "", "Tags": []},
    ]


def test_leftovers_by_cluster_id_are_proven_and_name_only_ones_are_not(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    populate(cloud)
    found = find_leftovers(make_api(endpoint, sleeps), CLUSTER, CLUSTER_ID)
    assert [(f.kind, f.id, f.proven, f.by_name) for f in found] == [
        ("CVM instance", "ins-proven01", True, False),
        ("CVM instance", "ins-nameonly", False, False),
        ("HPC cluster", "hpc-proven01", True, True),
        ("HPC cluster", "hpc-noid0001", False, True),
        ("HPC cluster", "hpc-byname01", False, True),
        ("security group", "sg-nameonly1", False, False),
        ("subnet", "subnet-proven1", True, False),
        ("VPC", "vpc-proven01", True, False),
        ("key pair", "skey-proven1", True, False),
    ]
    lines = [f.line() for f in found]
    assert lines[0] == ("CVM instance ins-proven01 (hcc-v100-gpu-0): "
                        "tccli cvm TerminateInstances --region ap-shanghai --InstanceIds '[\"ins-proven01\"]'")
    assert lines[1] == ("CVM instance ins-nameonly (hcc-v100-gpu-1; not provably this cluster's: owner infra-team, "
                        "cluster-id not tagged): tccli cvm TerminateInstances --region ap-shanghai "
                        "--InstanceIds '[\"ins-nameonly\"]'")
    assert lines[2] == ("HPC cluster hpc-proven01 (hcc-v100-0123456789ab): tccli cvm DeleteHpcClusters "
                        "--region ap-shanghai --HpcClusterIds '[\"hpc-proven01\"]'")
    assert lines[4] == ("HPC cluster hpc-byname01 (hcc-v100-hcc-old; found by name, not provably this cluster's: "
                        "owner not tagged, cluster-id not tagged): tccli cvm DeleteHpcClusters --region ap-shanghai "
                        "--HpcClusterIds '[\"hpc-byname01\"]'")
    assert lines[7] == "VPC vpc-proven01 (hcc-v100-vpc): tccli vpc DeleteVpc --region ap-shanghai --VpcId vpc-proven01"
    # Every search was by the name tag; VPC's paging is in strings.
    (vpcs,) = cloud.actions("DescribeVpcs")
    assert vpcs.params == {"Filters": [{"Name": "tag:gpuctl:cluster", "Values": ["hcc-v100"]}],
                           "Offset": "0", "Limit": "100"}


def test_leftovers_without_the_cluster_id_are_all_unproven(
        cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    populate(cloud)
    found = find_leftovers(make_api(endpoint, sleeps), CLUSTER)
    instances = [(f.id, f.proven, f.cluster_id) for f in found if f.kind == "CVM instance"]
    # With the id lost, the other cluster's instance of the same name cannot be told apart: reported.
    assert instances == [("ins-proven01", False, CLUSTER_ID), ("ins-nameonly", False, None),
                         ("ins-otherid1", False, "ffffffffffff")]
    assert not any(f.proven for f in found)


def test_leftovers_page_through_large_answers(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    cloud.instances += [instance(f"ins-{n:08d}", f"hcc-v100-gpu-{n}", cluster_tags()) for n in range(150)]
    found = find_leftovers(make_api(endpoint, sleeps), CLUSTER, CLUSTER_ID)
    assert len(found) == 150
    assert found[-1].id == "ins-00000149"
    pages = [(c.params["Offset"], c.params["Limit"]) for c in cloud.actions("DescribeInstances")]
    assert pages == [(0, 100), (100, 100)]


def test_leftover_search_survives_throttling(cloud: FakeTencentCloud, endpoint: str, sleeps: Sleeps) -> None:
    populate(cloud)
    cloud.faults.append(Fault("DescribeSecurityGroups", "RequestLimitExceeded", "slow down", times=2))
    found = find_leftovers(make_api(endpoint, sleeps), CLUSTER, CLUSTER_ID)
    assert "sg-nameonly1" in [f.id for f in found]
    assert len(sleeps) == 2
