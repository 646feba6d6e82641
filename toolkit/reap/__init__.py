"""`gpuctl reap`: every cluster this user or team has, wherever it is recorded, and what to do with it.

Two sources, read separately and then matched (`classify.py`):

- local state (`local.py`): each cluster directory under the gpuctl home; for a cloud cluster the
  stack's config (`Pulumi.<cluster>.yaml`: cluster id, creation time, owner, region), always on this
  machine, and the stack's checkpoint where it lives in the default file backend (expiry, nodes);
  for a lab, its state file. A stack in a remote backend (s3://, Pulumi Cloud) is not read: that
  needs the Pulumi CLI, so its expiry comes from the cloud's tags instead, and the row says so.
- the clouds (`cloud.py`): every region the account sees (the API's own DescribeRegions), one tag
  search per region for instances that carry `gpuctl:cluster`; a region that cannot be asked is
  listed with the reason, never skipped.

A cluster is `expired` (past its `gpuctl:expires`), `live`, `orphaned` (tagged by gpuctl but held by
no state here) or `unknown` (no expiry known: a lab reaped without its spec). `gpuctl reap --yes`
destroys the expired ones that the state holds through the provider driver's own `down`; nothing
without gpuctl's tags is ever touched.
"""
