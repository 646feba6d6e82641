"""Benchmarks: nccl-tests runner and result parser, expected-bandwidth model, reports."""
