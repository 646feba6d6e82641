"""Renderers: nccl.conf that NCCL parses as intended, a safe shell file, JSON (the golden
nccl.conf files of real captures are in test_detect_tune.py)."""

from __future__ import annotations

import subprocess

import pytest

from tests.tuning import topologies as topo
from toolkit.tuning import tune
from toolkit.tuning.config import NcclConfig, NcclSetting


def _parse_like_nccl(text: str) -> dict[str, str]:
    """What NCCL's setEnvFile takes from the file, including releases without a '#' check:
    split at the first '=', value verbatim."""
    found = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            found[key] = value
    return found


def test_nccl_conf_parses_to_exactly_the_pinned_settings_even_without_comment_support() -> None:
    config = tune(topo.h100_numaoff(), fabric=None, mtu=None, nccl_version="2.26.2",
                  overrides={"NCCL_DEBUG": "WARN"})
    parsed = _parse_like_nccl(config.render_nccl_conf())
    assert parsed == {s.name: s.value for s in config.pinned()}
    assert parsed["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"


def test_nccl_conf_header_names_gpuctl_node_and_version() -> None:
    text = tune(topo.h100_numaoff(), fabric=None, mtu=None, nccl_version="2.26.2", overrides={}).render_nccl_conf()
    assert text.startswith("# /etc/nccl.conf written by gpuctl")
    assert "# node: tpgds-aihub0007\n" in text
    assert "# NCCL version tuned for: 2.26.2\n" in text


def test_env_file_is_safely_quoted_for_sh() -> None:
    config = NcclConfig(hostname="n")
    config.set(NcclSetting(name="NCCL_IB_HCA", value='=mlx5_0,$(touch /tmp/x)`id`"\\', layer="user-override",
                           reason="test", source="test"))
    script = config.render_env() + 'printf %s "$NCCL_IB_HCA"\n'
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout == '=mlx5_0,$(touch /tmp/x)`id`"\\'


def test_setting_refuses_values_nccl_would_misread() -> None:
    with pytest.raises(ValueError, match="surrounding blanks"):
        NcclSetting(name="NCCL_IB_HCA", value="mlx5_0 ", layer="user-override", reason="", source="")
    with pytest.raises(ValueError, match="not an NCCL variable"):
        NcclSetting(name="PATH", value="x", layer="user-override", reason="", source="")


def test_json_keyed_by_variable() -> None:
    data = tune(topo.cx7_show_gids(), fabric=None, mtu=None, nccl_version="2.26.2", overrides={}).to_json()
    assert data["NCCL_IB_GID_INDEX"]["value"] == "3"
    assert data["NCCL_IB_GID_INDEX"]["layer"] == "topology-rule"
    assert set(data["NCCL_IB_GID_INDEX"]) >= {"value", "layer", "reason", "source"}


def test_source_comment_carries_the_date_read() -> None:
    text = tune(topo.h100_numaoff(), fabric=None, mtu=None, nccl_version="2.26.2", overrides={}).render_nccl_conf()
    assert ("# source: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-hca "
            "(read 2026-11-29)\nNCCL_IB_HCA==mlx5_0,") in text


def test_document_keeps_the_net_plugin() -> None:
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2", overrides={},
                  provider="tencentcloud", bundle_files=["/opt/tencent/tccl/lib/libnccl-net.so"])
    document = config.to_document()
    assert document["net_plugin"] == "libnccl-net.so"
    again = NcclConfig.from_document(document)
    assert again.net_plugin == "libnccl-net.so"
    assert again.notes == config.notes


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\r", "\x85", "\u2028", "\x00", "\x1b[2J"])
def test_the_header_quotes_a_captures_hostname_and_version_as_one_comment_line(brk: str) -> None:
    """The node's name and NCCL version come from its captures: a line break in them must not
    start a line of nccl.conf that NCCL reads as a setting."""
    from tests.hostile.nccl_parse import NCCL_226, NCCL_230, nccl_reads

    config = NcclConfig(hostname=f"node{brk}NCCL_NET_PLUGIN=/tmp/evil.so", nccl_version=f"2.26.2{brk}NCCL_DEBUG=INFO",
                        fabric="tcp")
    config.set(NcclSetting("NCCL_IB_DISABLE", "1", "topology-rule", "tcp", "src"))
    text = config.render_nccl_conf()
    for parsed in (_parse_like_nccl(text), nccl_reads(text, NCCL_226), nccl_reads(text, NCCL_230)):
        assert parsed == {"NCCL_IB_DISABLE": "1"}
    # Blanks and line breaks become one space (the comment is flattened); any other control its \uXXXX.
    between = {"\n": " ", "\r\n": " ", "\r": " ", "\x85": " ", "\u2028": " ", "\x00": "\\u0000",
               "\x1b[2J": "\\u001b[2J"}[brk]
    assert f"# node: node{between}NCCL_NET_PLUGIN equals /tmp/evil.so" in text.splitlines()
