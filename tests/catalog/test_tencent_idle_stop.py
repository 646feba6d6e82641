"""validate refuses `idle_action: stop` where Tencent cannot stop charging (issue 21, item 13).

"No Charges When Shut Down only applies to pay-as-you-go instances whose system disk and data disks
are both cloud disks"; not available for "Instances attached with local disks" and "Spot instances"
(tencentyun/intlcloud-documents@b7e17ea:yehe_doc/计算/云服务器/购买指南/按量计费实例关机不收费说明_intl_en.md:5-9,
page 213/19918); StoppedMode is for pay-as-you-go instances (SDK 3.1.178 models.py:22623-22625).
"""

from __future__ import annotations

import pytest

from tests.catalog.test_tencent_names import check, spec_text

pytestmark = pytest.mark.unit
STOP = "  idle_stop_minutes: 60\n"
FIX = ("(https://www.tencentcloud.com/document/product/213/19918); set lifecycle.idle_action: release (the node is "
       "terminated when idle) or remove idle_stop_minutes")


def test_stop_on_a_type_with_local_disks_is_refused() -> None:
    problems, _ = check(spec_text("HCCG5v.24XLARGE384", zone="ap-shanghai-5", fabric="rdma", lifecycle=STOP))
    assert problems == [
        "s.yaml: lifecycle.idle_action: stop on node_pools[0] (gpu): HCCG5v.24XLARGE384 has local disks, and Tencent "
        f"does not stop charging a stopped instance with them {FIX}"]


def test_stop_on_spot_and_monthly_is_refused() -> None:
    problems, _ = check(spec_text(billing="{mode: spot, spot_max_price_per_hour: 120.0}", lifecycle=STOP))
    assert problems == [
        "s.yaml: lifecycle.idle_action: stop on node_pools[0] (gpu): Tencent does not stop charging a stopped spot "
        f"instance {FIX}"]
    problems, _ = check(spec_text(billing="{mode: monthly, months: 1}", lifecycle=STOP))
    assert problems == [
        "s.yaml: lifecycle.idle_action: stop on node_pools[0] (gpu): a monthly (PREPAID) instance is paid up front, "
        f"so stopping it saves nothing {FIX}"]


def test_stop_on_pay_as_you_go_cloud_disks_and_release_anywhere_pass() -> None:
    assert check(spec_text(lifecycle=STOP))[0] == []
    release = STOP + "  idle_action: release\n"
    assert check(spec_text("HCCG5v.24XLARGE384", zone="ap-shanghai-5", fabric="rdma", lifecycle=release))[0] == []
    assert check(spec_text(billing="{mode: spot, spot_max_price_per_hour: 120.0}", lifecycle=release))[0] == []
