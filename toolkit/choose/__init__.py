"""`gpuctl choose`: rank the GPU offers of both clouds against a job's needs, with sources.

needs.py (what the user asks for, checked), busbw.py (expected or measured all-reduce busbw of an
offer), offers.py (catalog rows + price cache -> offers, or the reasons a row cannot serve),
rank.py (the order and each row's one-line why), spec_writer.py (the winner as a cluster spec),
report.py (the `--json` document). Nothing here contacts a cloud: prices come from the catalog and
the dated cache `gpuctl prices refresh` writes.
"""
