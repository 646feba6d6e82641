"""`gpuctl choose`: ranking on a small fixture catalog with literal expected values, a measured
bench result beating the model, unmet needs with reasons, "no price" (never 0), --write-spec
through the real validate, and hostile values for every option (exit 2, no traceback)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from toolkit.bench.results import FILE_NAME, Results, RunMeta, Series, dump
from toolkit.catalog.models import GpuInfo, InstanceType, RdmaInfo, Source
from toolkit.choose import offers as offer_rows
from toolkit.choose.busbw import load_measured
from toolkit.choose.needs import Needs, build_needs
from toolkit.choose.rank import rank, winner
from toolkit.cli import main
from toolkit.errors import UsageError
from toolkit.prices.cache import PriceCache, PriceEntry, save_cache

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
READ = datetime(2026, 12, 1, 10, 2, tzinfo=UTC)
SOURCE = Source(url="https://example.com/gpu-table", read=date(2026, 11, 29))


def row(name: str, gpus: int, memory: int, rdma: RdmaInfo | None, *, hcc: bool = False) -> InstanceType:
    return InstanceType(name=name, family=name, gpu=GpuInfo(model="NVIDIA A100 80GB", count=gpus, memory_gib=memory),
                        rdma=rdma, hcc=hcc, source=SOURCE)


ROWS = [
    offer_rows.Row("alicloud", "CNY", row("ecs.a-8x", 8, 80, RdmaInfo(kind="erdma", nics=2, gbps=160))),
    offer_rows.Row("tencentcloud", "CNY", row("HCCX", 8, 80, RdmaInfo(kind="roce", nics=1, gbps=100), hcc=True)),
    offer_rows.Row("alicloud", "CNY", row("ecs.c-8x", 8, 80, None)),
    offer_rows.Row("tencentcloud", "CNY", row("T-1x", 1, 80, None)),
    offer_rows.Row("alicloud", "CNY", row("ecs.e-8x", 8, 24, RdmaInfo(kind="erdma", nics=2, gbps=160))),
]


def entry(provider: str, region: str, zone: str | None, itype: str, value: float,
          billing: str = "pay_as_you_go") -> PriceEntry:
    return PriceEntry(provider=provider, region=region, zone=zone, instance_type=itype, billing=billing,
                      currency="CNY", value=value, read_at=READ, source="live: test API")


CACHE = PriceCache(entries=[entry("alicloud", "cn-wulanchabu", None, "ecs.a-8x", 200.0),
                            entry("tencentcloud", "ap-shanghai", "ap-shanghai-5", "HCCX", 150.0)])


def needs(**changes: object) -> Needs:
    given: dict[str, object] = {"gpu": None, "gpu_memory": 80, "gpus_per_node": 8, "gpus": 16, "fabric": "required",
                                "hours": 10.0, "budget": 10000.0, "spot": False, "regions": None, "zones": None}
    given.update(changes)
    return build_needs(**given)  # type: ignore[arg-type]


def test_ranking_order_and_values_on_the_fixture_catalog() -> None:
    built = offer_rows.build(needs(), CACHE, NOW, {}, rows=ROWS)
    ranked = rank(built.offers, needs())
    assert [(o.rank, o.provider, o.instance_type) for o in ranked] == [
        (1, "tencentcloud", "HCCX"), (2, "alicloud", "ecs.a-8x")]
    first, second = ranked
    # HCCX: 2 nodes x 150; 100 Gbit/s = 12.5 GB/s x 0.9 x 1.875 (tree on 2 nodes) = 21.09 GB/s.
    assert (first.nodes, first.per_hour, first.per_gpu_hour, first.busbw_gbps, first.per_busbw) == (
        2, 300.0, 18.75, 21.09, 14.22)
    assert (first.total, first.within_budget, first.rdma_gbps_per_gpu) == (3000.0, True, 12.5)
    assert (first.region, first.zone, first.busbw_from) == ("ap-shanghai", "ap-shanghai-5", "model")
    assert first.price_read == "2026-12-01T10:02:00Z"
    assert first.price_source == "live, read 2026-12-01 10:02 UTC (test API)"
    assert first.why == "best: lowest cost per GB/s of all-reduce busbw, 14.22 CNY/h per GB/s (21.09 GB/s model)"
    # a-8x: 2 x 200; PCIe inside (no NVLink stated): 25.2 x 0.92 x 15/16 = 21.74 GB/s bounds the tree.
    assert (second.per_hour, second.busbw_gbps, second.per_busbw, second.total) == (400.0, 21.74, 18.4, 4000.0)
    assert second.why == "18.40 CNY/h per GB/s of busbw, 29% more than tencentcloud HCCX"
    assert winner(ranked) == first


def test_without_fabric_the_cluster_price_ranks() -> None:
    wanted = needs(fabric="no", gpus=8)
    ranked = rank(offer_rows.build(wanted, CACHE, NOW, {}, rows=ROWS).offers, wanted)
    assert [(o.instance_type, o.per_hour) for o in ranked] == [("HCCX", 150.0), ("ecs.a-8x", 200.0),
                                                              ("ecs.c-8x", None)]
    assert ranked[1].why == "200.00 CNY/h, 50.00 more than tencentcloud HCCX"
    assert ranked[2].why == ("no price: after every priced offer; among those by GPUs rented (8), then busbw "
                             "(25.2 GB/s model)")


def test_unmet_needs_are_listed_with_reasons() -> None:
    built = offer_rows.build(needs(budget=3500.0), CACHE, NOW, {}, rows=ROWS)
    assert {(u.instance_type, tuple(u.reasons)) for u in built.unmet} == {
        ("ecs.c-8x", ("no RDMA when required: the type has no RDMA NICs",)),
        ("T-1x", ("too few GPUs per node: 1 < 8", "no RDMA when required: the type has no RDMA NICs")),
        ("ecs.e-8x", ("GPU memory too small: 24 GiB < 80 GiB",)),
        ("ecs.a-8x", ("over budget: 4,000.00 CNY for 10 h > 3,500.00 CNY",)),
    }
    assert [o.instance_type for o in built.offers] == ["HCCX"]


def test_gpu_model_is_a_whole_word() -> None:
    assert offer_rows.gpu_matches("A10", "NVIDIA A10")
    assert not offer_rows.gpu_matches("A10", "NVIDIA A100 NVLink 40GB")
    assert offer_rows.gpu_matches("a100", "NVIDIA A100 80GB")


def test_no_price_is_no_price_never_zero() -> None:
    wanted = needs(regions=["cn-beijing"])
    built = offer_rows.build(wanted, CACHE, NOW, {}, rows=ROWS)
    (offer,) = built.offers
    assert (offer.instance_type, offer.region, offer.per_hour, offer.total, offer.per_busbw, offer.within_budget) == (
        "ecs.a-8x", "cn-beijing", None, None, None, None)
    assert offer.price_note == "no price: run `gpuctl prices refresh --provider alicloud --region cn-beijing`"
    # HCCX is Tencent's: cn-beijing is an Alibaba region id, so it is not in the regions asked for.
    assert ("HCCX", ["not in the regions asked for (cn-beijing)"]) in [(u.instance_type, u.reasons)
                                                                       for u in built.unmet]


def bench_run(tmp: Path, provider: str, itype: str, peak: float, *, replayed: str | None = None) -> Path:
    run_dir = tmp / f"run-{itype}"
    run_dir.mkdir()
    meta = RunMeta(cluster="c", provider=provider, region="ap-shanghai", instance_type=itype, nodes=2,
                   gpus_per_node=8, nccl_version="2.26.2", started_at="2026-12-01T09:00:00Z", settings=[],
                   price=None, replayed=replayed)
    series = Series(collective="all_reduce", variant="tuned", repeat=0, source="all_reduce.out", ranks=16,
                    points=[], avg_busbw_gbps=None, peak_busbw_gbps=peak, peak_size_bytes=8 << 30,
                    truncated=False, failed=False, errors=[], expectation=None, log_check=None)
    (run_dir / FILE_NAME).write_text(dump(Results(meta=meta, series=[series])))
    return run_dir


def test_a_measured_bench_result_beats_the_model_for_its_type(tmp_path: Path) -> None:
    run_dir = bench_run(tmp_path, "tencentcloud", "HCCX", 9.5)
    measured, notes = load_measured([run_dir])
    assert notes == []
    ranked = rank(offer_rows.build(needs(), CACHE, NOW, measured, rows=ROWS).offers, needs())
    assert [(o.instance_type, o.busbw_gbps, o.busbw_from, o.per_busbw) for o in ranked] == [
        ("ecs.a-8x", 21.74, "model", 18.4), ("HCCX", 9.5, "measured", 31.58)]
    assert ranked[1].busbw_basis.startswith(f"measured: peak all_reduce busbw on 2 x 8 GPUs ({run_dir}/results.json")


def test_a_replayed_lab_run_is_not_a_measurement(tmp_path: Path) -> None:
    run_dir = bench_run(tmp_path, "tencentcloud", "HCCX", 99.0, replayed="lab stand-ins")
    measured, notes = load_measured([run_dir])
    assert measured == {}
    assert notes == [f"--bench {run_dir}: replayed from captures of other machines, not a measurement: ignored"]


def test_compare_only_rows_load_and_never_win() -> None:
    text = """
clouds:
  - provider: huaweicloud
    currency: CNY
    instance_types:
      - name: p.x
        family: p
        gpu: {model: NVIDIA A100 80GB, count: 8, memory_gib: 80}
        rdma: {kind: ib, nics: 4, gbps: 800}
        price:
          kind: official list
          pay_as_you_go_per_hour: 1.0
          currency: CNY
          region: cn-north-4
          source: {url: "https://example.com/huawei", read: 2026-11-30}
        source: {url: "https://example.com/huawei", read: 2026-11-30}
"""
    (cloud,) = offer_rows.load_compare_only(text)
    rows = [*ROWS, *(offer_rows.Row(cloud.provider, cloud.currency, r, compare_only=True)
                     for r in cloud.instance_types)]
    ranked = rank(offer_rows.build(needs(), CACHE, NOW, {}, rows=rows).offers, needs())
    assert ranked[0].instance_type == "p.x"
    assert ranked[0].compare_only
    assert ranked[0].why.startswith("compare only: gpuctl cannot create these yet; best:")
    best = winner(ranked)
    assert best is not None
    assert best.instance_type == "HCCX"


# ------------------------------------------------------------------------------------ the command


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "gpuctl"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user" / ".ssh").mkdir(parents=True)
    # A key the user holds, where the written spec's placeholder points (Alibaba takes ECDSA).
    (tmp_path / "user" / ".ssh" / "id_ecdsa.pub").write_text(
        "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGpuY3RsdGVzdGtleQ== me@laptop\n")
    monkeypatch.chdir(tmp_path)
    save_cache(PriceCache(entries=[
        entry("alicloud", "cn-wulanchabu", None, "ecs.ebmgn7ex.32xlarge", 250.0),
        entry("alicloud", "cn-wulanchabu", "cn-wulanchabu-c", "ecs.ebmgn7ex.32xlarge", 90.0, billing="spot"),
    ]))
    return tmp_path


PROFILE_2 = ["choose", "--gpu-memory", "80", "--gpus-per-node", "8", "--gpus", "16", "--fabric", "required",
             "--hours", "168"]


def test_json_document_matches_its_schema(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*PROFILE_2, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    schema = json.loads((REPO / "docs" / "schemas" / "choose.json").read_text())
    jsonschema.validate(document, schema)
    first = document["offers"][0]
    assert (first["instance_type"], first["region"], first["per_hour"], first["total"]) == (
        "ecs.ebmgn7ex.32xlarge", "cn-wulanchabu", 500.0, 84000.0)
    assert document["winner"] == "alicloud/ecs.ebmgn7ex.32xlarge"
    no_price = [o for o in document["offers"] if o["per_hour"] is None]
    assert no_price
    assert all(o["price_note"].startswith("no price: run `gpuctl prices refresh") for o in no_price)
    # A catalog figure says its kind, its region and its date beside the price.
    pulled = {o["instance_type"]: o["price_note"] for o in document["offers"]
              if "(third-party API pull)" in o["price_note"]}
    assert pulled["ecs.ebmgn8v.48xlarge"].startswith(
        "pay-as-you-go price (third-party API pull) for eu-central-1 (eu-central-1a), read 2026-12-02; includes a "
        "40 GiB ESSD system disk")


def test_write_spec_validates_and_never_overwrites(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*PROFILE_2, "--write-spec", "cluster.yaml"]) == 0
    out = capsys.readouterr().out
    assert "wrote cluster.yaml" in out
    text = (home / "cluster.yaml").read_text()
    assert "ssh.public_key" in text
    assert "public_key: ~/.ssh/id_ecdsa.pub" in text
    assert "zone: cn-wulanchabu-c" in text  # the zone the spot history shows selling the type
    assert main(["validate", "cluster.yaml"]) == 0  # the real validate code path
    assert "cluster.yaml: ok (alicloud, 2 nodes, fabric erdma" in capsys.readouterr().out
    before = text
    assert main([*PROFILE_2, "--write-spec", "cluster.yaml"]) == 2
    assert "the file exists; gpuctl never writes over a file" in capsys.readouterr().err
    assert (home / "cluster.yaml").read_text() == before


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029"])
def test_a_cached_source_with_a_line_break_stays_inside_the_header_comment(
    home: Path, brk: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A price cache is data: its `source` goes into the written spec's header comment, and a line
    break there must not end the comment and add keys (owner, nccl_overrides) to the spec."""
    injected = f"live: x{brk}owner: evil{brk}nccl_overrides: {{NCCL_DEBUG: INFO}}{brk}# "
    hostile = entry("alicloud", "cn-wulanchabu", None, "ecs.ebmgn7ex.32xlarge", 250.0).model_copy(
        update={"source": injected})
    save_cache(PriceCache(entries=[hostile]))
    assert main([*PROFILE_2, "--zone", "cn-wulanchabu-c", "--write-spec", "cluster.yaml"]) == 0
    capsys.readouterr()
    text = (home / "cluster.yaml").read_text()
    header = [line for line in text.splitlines(keepends=True) if line.startswith("#")]
    assert len(header) == 7
    assert all(line.count("\n") == 1 for line in header)
    assert list(yaml.safe_load(text)) == ["name", "provider", "region", "zone", "node_pools", "network", "ssh",
                                          "lifecycle", "tags"]
    escaped = {"\n": "\\u000a", "\r": "\\u000d", "\r\n": "\\u000d\\u000a", "\x85": "\\u0085",
               "\u2028": "\\u2028", "\u2029": "\\u2029"}[brk]
    assert f"(x{escaped}owner: evil{escaped}nccl_overrides: {{NCCL_DEBUG: INFO}}{escaped}# ))" in header[1]


def test_write_spec_without_a_zone_says_how_to_get_one(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["choose", "--gpu", "A10", "--region", "ap-guangzhou", "--write-spec", "lora.yaml"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no zone of ap-guangzhou is known to sell" in err
    assert "Traceback" not in err
    assert not (home / "lora.yaml").exists()
    assert main([*args, "--zone", "ap-guangzhou-3"]) == 0
    assert "zone: ap-guangzhou-3" in (home / "lora.yaml").read_text()


def test_a_tencent_winner_written_as_a_spec_validates(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Tencent takes RSA keys only: the written spec points at ~/.ssh/id_rsa.pub.
    (home / "user" / ".ssh" / "id_rsa.pub").write_text((REPO / "examples" / "ssh" / "example_rsa.pub").read_text())
    args = ["choose", "--gpu", "A100", "--gpus", "8", "--gpus-per-node", "8", "--hours", "24",
            "--region", "ap-shanghai", "--zone", "ap-shanghai-4", "--write-spec", "gt4.yaml"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "winner: tencentcloud/GT4.41XLARGE948" in out
    text = (home / "gt4.yaml").read_text()
    assert "instance_type: GT4.41XLARGE948" in text
    assert main(["validate", "gt4.yaml"]) == 0
    assert "gt4.yaml: ok (tencentcloud, 1 node, fabric tcp" in capsys.readouterr().out


HOSTILE = [
    ["--gpu", "{{ lookup('env','HOME') }}"], ["--gpu", "-oProxyCommand=x"], ["--gpu", "A10\nrm"], ["--gpu", ""],
    ["--gpu-memory", "-1"], ["--gpu-memory", "lots"], ["--gpu-memory", "0"],
    ["--gpu", "A10", "--gpus-per-node", "0"], ["--gpu", "A10", "--gpus-per-node", "99"],
    ["--gpu", "A10", "--gpus", "-8"], ["--gpu", "A10", "--gpus-per-node", "8", "--gpus", "4"],
    ["--gpu", "A10", "--fabric", "maybe"], ["--gpu", "A10", "--hours", "nan"], ["--gpu", "A10", "--hours", "inf"],
    ["--gpu", "A10", "--hours", "-3"], ["--gpu", "A10", "--hours", "1e9"],
    ["--gpu", "A10", "--hours", "5", "--budget", "nan"], ["--gpu", "A10", "--budget", "100"],
    ["--gpu", "A10", "--hours", "5", "--budget", "-100"],
    ["--gpu", "A10", "--region", "$(reboot)"], ["--gpu", "A10", "--region", "cn-{{x}}"],
    ["--gpu", "A10", "--region", "CN-BEIJING"], ["--gpu", "A10", "--zone", "a\x1bb"],
    ["--gpu", "A10", "--bench", "/nonexistent/run"], ["--gpu", "A10", "--bench", "{% x %}"],
    ["--gpu", "A10", "--write-spec", "/nonexistent/dir/spec.yaml"], ["--gpu", "A10", "--write-spec", "a\nb.yaml"],
    ["--gpu", "A10", "--write-spec", "{{ x }}.yaml"], ["--gpu", "A10", "--spot=yes"],
    [],
]


@pytest.mark.parametrize("argv", HOSTILE, ids=[" ".join(a) or "(nothing)" for a in HOSTILE])
def test_hostile_values_exit_2_without_a_traceback(argv: list[str], home: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["choose", *argv])
    except SystemExit as exit_:  # argparse's own refusals (a type it cannot read, a choice it lacks)
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert "internal error" not in err
    assert not list(home.glob("*.yaml"))


def test_needs_refuse_budget_without_hours() -> None:
    with pytest.raises(UsageError, match="--budget needs --hours"):
        needs(hours=None, budget=5.0)


def test_write_spec_on_a_full_disk_is_a_clean_refusal_and_leaves_no_half_spec(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os


    real_fdopen = os.fdopen

    def full(fd: int, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        handle = real_fdopen(fd, *args, **kwargs)  # type: ignore[call-overload]

        def write(text: str) -> int:
            handle.buffer.write(text[:10].encode())
            raise OSError(errno.ENOSPC, "No space left on device")
        handle.write = write
        return handle

    monkeypatch.setattr(os, "fdopen", full)
    assert main([*PROFILE_2, "--write-spec", "cluster.yaml"]) == 2
    err = capsys.readouterr().err
    assert "--write-spec cluster.yaml: cannot be written (No space left on device)" in err
    assert "Traceback" not in err
    assert not (home / "cluster.yaml").exists()


def test_nvlink_not_stated_is_modelled_as_pcie_and_called_a_lower_bound_never_no_nvlink() -> None:
    from toolkit.choose.busbw import expected

    def shaped(nvlink: bool | None) -> InstanceType:
        return InstanceType(name="X.8", family="X", source=SOURCE, rdma=RdmaInfo(kind="roce", nics=8, gbps=3200),
                            gpu=GpuInfo(model="NVIDIA H20", count=8, memory_gib=96, nvlink=nvlink))

    unknown = expected(shaped(None), 2, 8, None)
    assert "whether the GPUs have NVLink is not stated by the catalog's source: modelled as PCIe (a lower bound)" \
        in unknown.basis
    stated_without_bandwidth = expected(shaped(True), 2, 8, None)
    assert "NVLink bandwidth not stated by the catalog's source: modelled as PCIe (a lower bound)" \
        in stated_without_bandwidth.basis
    assert "lower bound" not in expected(shaped(False), 2, 8, None).basis
