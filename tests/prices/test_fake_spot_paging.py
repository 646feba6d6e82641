"""The fake Alibaba API pages DescribeSpotPriceHistory by Offset / NextOffset (tests/fake_cloud/alibaba.py),
so a reader that takes only the first page is caught by a test: what the real API's paging is, the
SDK model says (NextOffset, "the starting row of the next page"); the last page's value is paper only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_cloud.alibaba import FakeAlibabaCloud, Offer, serve
from toolkit.providers.alicloud import sdk

pytestmark = pytest.mark.fake_cloud

KEY_ID, SECRET = "LTAI5tGpuctlPagingKey01", "gpuctlFakeAlibabaPagingSecret001"
REGION, ZONE, ITYPE = "cn-wulanchabu", "cn-wulanchabu-c", "ecs.ebmgn7ex.32xlarge"
POINTS = [(f"2026-12-01T0{h}:00:00Z", 30.0 + h) for h in range(5)]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[sdk.AlibabaApi]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    cloud = FakeAlibabaCloud(keys={KEY_ID: SECRET}, spot_page_rows=2,
                             offers=[Offer(REGION, ITYPE, pay_as_you_go=120.0, spot={ZONE: POINTS})])
    with serve(cloud) as url:
        yield sdk.connect(REGION, env={"ALICLOUD_ACCESS_KEY": KEY_ID, "ALICLOUD_SECRET_KEY": SECRET,
                                       sdk.ENDPOINT_ENV: url}, retry=sdk.RetryPolicy(tries=1))


def test_spot_history_comes_in_pages_with_the_next_offset(api: sdk.AlibabaApi) -> None:
    from alibabacloud_ecs20140526 import models

    pages = []
    offset = 0
    while True:
        body = api.call("DescribeSpotPriceHistory", models.DescribeSpotPriceHistoryRequest(
            region_id=REGION, instance_type=ITYPE, network_type="vpc", zone_id=ZONE, offset=offset))
        pages.append([p["SpotPrice"] for p in body["SpotPrices"]["SpotPriceType"]])
        offset = body["NextOffset"]
        if not offset:
            break
    assert pages == [[30.0, 31.0], [32.0, 33.0], [34.0]]
