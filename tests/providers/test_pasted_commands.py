"""Commands gpuctl prints for pasting (the leftover and listing commands) keep every value one word.

A cluster name read back from a state file, or an id a cloud answered, may hold a quote, `$(...)`,
a `;` or a newline: pasted into a shell, none of them may run, and the value must reach the CLI as
the one argument it was.
"""

from __future__ import annotations

import json
import shlex

import pytest

from toolkit.providers.alicloud.driver import AlicloudDriver
from toolkit.providers.alicloud.leftovers import KINDS as ALIBABA_KINDS
from toolkit.providers.tencentcloud.driver import TencentcloudDriver
from toolkit.providers.tencentcloud.leftovers import KINDS as TENCENT_KINDS

pytestmark = pytest.mark.unit

HOSTILE = [
    "it's",
    "a$(touch /tmp/pwned)b",
    "x`id`",
    "a; rm -rf ~",
    'q"uote',
    "new\nline",
    "two words",
    "\\back",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_alibaba_listing_keeps_the_cluster_name_one_word(value: str) -> None:
    words = shlex.split(AlicloudDriver().list_by_tag_command("cn-wulanchabu", value))
    assert words == ["aliyun", "ecs", "DescribeInstances", "--RegionId", "cn-wulanchabu",
                     "--Tag.1.Key", "gpuctl:cluster", "--Tag.1.Value", value]


@pytest.mark.parametrize("value", HOSTILE)
def test_tencent_listing_keeps_the_cluster_name_in_its_json(value: str) -> None:
    words = shlex.split(TencentcloudDriver().list_by_tag_command("ap-shanghai", value))
    assert words[:5] == ["tccli", "cvm", "DescribeInstances", "--region", "ap-shanghai"]
    assert words[5] == "--Filters"
    assert json.loads(words[6]) == [{"Name": "tag:gpuctl:cluster", "Values": [value]}]
    assert len(words) == 7


@pytest.mark.parametrize("value", HOSTILE)
def test_alibaba_leftover_commands_quote_the_ids(value: str) -> None:
    for kind in ALIBABA_KINDS:
        command = kind.command("cn-wulanchabu", value)
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";")  # the RAM policy's two are joined by `;`
        lexer.whitespace_split = True
        words = list(lexer)
        assert words[0] == "aliyun", command
        assert words.count(";") == command.count("; aliyun"), command  # no `;` but gpuctl's own
        assert value in words or json.dumps([value]) in words, command


def test_alibaba_key_pair_command_sends_a_json_list() -> None:
    kind = next(k for k in ALIBABA_KINDS if k.label == "key pair" or "KeyPair" in k.remove)
    assert shlex.split(kind.command("cn-wulanchabu", "it's")) == [
        "aliyun", "ecs", "DeleteKeyPairs", "--RegionId", "cn-wulanchabu", "--KeyPairNames", '["it\'s"]']


@pytest.mark.parametrize("value", HOSTILE)
def test_tencent_leftover_commands_quote_the_ids(value: str) -> None:
    for kind in TENCENT_KINDS:
        words = shlex.split(kind.command("ap-shanghai", value))
        assert words[0] == "tccli"
        assert value in words or json.dumps([value]) in words, kind.remove
