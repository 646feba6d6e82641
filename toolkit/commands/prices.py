"""`gpuctl prices refresh [--provider P] [--region R] [--instance-type T] [--json]`: read live prices into the cache.

Asks Alibaba Cloud (DescribePrice, DescribeSpotPriceHistory) and Tencent Cloud
(DescribeZoneInstanceConfigInfos) what the catalog's instance types cost now, writes them with
their date and source to the price cache under the gpuctl home (docs/prices.md), and prints them.
`plan` then shows these prices, with where and when they were read.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="prices_action", metavar="ACTION")
    sub.required = True
    refresh = sub.add_parser("refresh", help="read the clouds' prices for the catalog's types into the cache",
                             description="read the clouds' prices for the catalog's types into the cache")
    refresh.add_argument("--provider", choices=["alicloud", "tencentcloud"],
                         help="one cloud (default: every cloud the cache holds)")
    refresh.add_argument("--region", help="the cloud's region name, e.g. cn-wulanchabu or ap-shanghai "
                                          "(needs --provider; default: the regions the cache holds)")
    refresh.add_argument("--instance-type", metavar="TYPE", help="one catalog instance type (default: all of them)")
    refresh.add_argument("--json", action="store_true", help="machine-readable output (docs/schemas/prices.json)")


def run(args: argparse.Namespace) -> int:
    import sys

    from toolkit.commands._reports import utc_iso
    from toolkit.errors import EXIT_PROVIDER
    from toolkit.prices.cache import utc_now
    from toolkit.prices.refresh import PricesReport, refresh

    now = utc_now().replace(microsecond=0)
    done, path = refresh(args.provider, args.region, args.instance_type, now=now)
    failed = EXIT_PROVIDER if done.not_refreshed else 0
    if done.not_refreshed:
        print(f"gpuctl prices: error: {len(done.not_refreshed)} region(s) could not be read: "
              + "; ".join(f"{gap.provider} {gap.region}" for gap in done.not_refreshed)
              + " (the reasons are in the output; their cached prices are kept as they were)", file=sys.stderr)
    if args.json:
        report = PricesReport(cache=str(path), read_at=utc_iso(now), entries=done.entries, not_priced=done.not_priced,
                              not_refreshed=done.not_refreshed)
        print(report.model_dump_json(indent=2))
        return failed
    print(f"{'provider':<13}{'region':<16}{'zone':<20}{'instance type':<30}{'billing':<15}{'per hour':>14}  source")
    for entry in done.entries:
        disk = f" (+{entry.system_disk_per_hour:g} {entry.system_disk})" if entry.system_disk_per_hour else ""
        print(f"{entry.provider:<13}{entry.region:<16}{entry.zone or '(region)':<20}{entry.instance_type:<30}"
              f"{entry.billing:<15}{entry.value:>10,.4f} {entry.currency}  {entry.describe(now)}{disk}")
    for row in done.not_priced:
        print(f"{row.provider:<13}{row.region:<16}{'':<20}{row.instance_type:<30}{'-':<15}{'no price':>14}  "
              f"{row.reason}")
    for gap in done.not_refreshed:
        print(f"{gap.provider:<13}{gap.region:<16}not refreshed (its cached prices are kept as they were): "
              f"{gap.reason}")
    print(f"{len(done.entries)} prices written to {path}" if done.entries or not done.not_refreshed
          else "nothing written")
    return failed
