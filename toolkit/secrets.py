"""Credentials gpuctl must never write, print or pass on: one list, one redaction, one clean environment.

gpuctl reads cloud and state-backend credentials from the environment only. Three rules follow,
each implemented here once and used everywhere:

- `redact(text)` replaces the value of every credential variable with `<NAME>`, and any credential
  that text carries in a well-known form (an Alibaba `LTAI...` or Tencent `AKID...` key id, a
  `SECRET_KEY=...` assignment, a PEM private key) with a marker; every line gpuctl prints passes
  through it (`toolkit.output`), and the Pulumi and Ansible paths apply it to what they keep.
- `child_env(needed)` is the environment a child process that needs no credential gets (Ansible,
  ssh): the caller's environment without any credential variable, plus what the child needs.
- `credential_names(env)` says which variables count as credentials: the documented ones by name,
  and any other whose name says it holds a secret (`*_SECRET*`, `*TOKEN*`, `*PASSWORD*` ...).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# The variables the docs tell users to export, per consumer. Kept by name so that a value is
# redacted even where its name would not look secret (ALICLOUD_ACCESS_KEY is half of a key pair).
CREDENTIAL_ENVS: tuple[str, ...] = (
    # Alibaba Cloud (Pulumi provider, ECS SDK, aliyun CLI)
    "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN",
    "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
    # Tencent Cloud (Pulumi provider, tencentcloud-sdk-python, tccli)
    "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SECURITY_TOKEN",
    # Pulumi state: passphrase of the secrets provider, Pulumi Cloud token
    "PULUMI_CONFIG_PASSPHRASE", "PULUMI_ACCESS_TOKEN",
    # State backends: S3 and OSS through its S3 endpoint, Azure Blob, Google Cloud Storage
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "GOOGLE_CREDENTIALS",
)
# Any other variable whose name says it holds a secret.
_SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSW|PASSPHRASE|ACCESS_KEY|CREDENTIAL|PRIVATE_KEY|API_KEY", re.IGNORECASE)
# Values shorter than this are not replaced: "1" or "ab" would shred unrelated text, and no real
# credential is that short.
MIN_SECRET_LENGTH = 4


# Credentials in the forms they take in logs, configs and pasted commands, found whatever the environment
# holds (a log read by check-log can carry another machine's key). Each replaced by a marker that says
# what stood there. Sources of the forms: Alibaba AccessKey ids start `LTAI` (RAM console), STS ids
# `STS.`; Tencent SecretIds start `AKID` (CAM API key page); AWS key ids `AKIA`/`ASIA`; Pulumi
# access tokens `pul-` + 40 hex digits.
_KEY_FORMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL),
     "<private key>"),
    (re.compile(r"\b(?:LTAI[0-9A-Za-z]{12,30}|STS\.[0-9A-Za-z]{16,64})\b"), "<Alibaba AccessKey id>"),
    (re.compile(r"\bAKID[0-9A-Za-z]{13,40}\b"), "<Tencent SecretId>"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "<AWS access key id>"),
    (re.compile(r"\bpul-[0-9a-f]{40}\b"), "<Pulumi access token>"),
)
# `NAME=value`, `NAME: value`, `"name": "value"` where the name says it holds a secret: the value goes.
_ASSIGNED = re.compile(
    r"(?P<name>\b[A-Z0-9_]*(?:SECRET|TOKEN|PASSW|PASSPHRASE|ACCESS_KEY|CREDENTIAL|PRIVATE_KEY|API_KEY)[A-Z0-9_]*"
    r"|\b(?:[Aa]ccess_?[Kk]ey_?[Ss]ecret|[Ss]ecret_?[Kk]ey|[Ss]ecurity_?[Tt]oken|[Pp]assword|[Pp]assphrase)\b)"
    r"(?P<sep>[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\s\"',;&]{4,})")


def credential_names(env: Mapping[str, str] | None = None) -> list[str]:
    """The names in `env` that hold a credential (documented ones first, then look-alikes)."""
    env = os.environ if env is None else env
    named = [name for name in CREDENTIAL_ENVS if env.get(name)]
    return named + sorted(n for n in env if n not in CREDENTIAL_ENVS and _SECRET_NAME.search(n) and env.get(n))


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every credential value from `env` (default: this process's) replaced by `<NAME>`,
    and every credential in a well-known form replaced by a marker naming the form."""
    env = os.environ if env is None else env
    values = [(env[name], name) for name in credential_names(env) if len(env[name]) >= MIN_SECRET_LENGTH]
    # Longest first, so a secret that contains another is replaced whole.
    for value, name in sorted(values, key=lambda pair: -len(pair[0])):
        text = text.replace(value, f"<{name}>")
    for form, marker in _KEY_FORMS:
        text = form.sub(marker, text)
    return _ASSIGNED.sub(_assigned_marker, text)


def _assigned_marker(found: re.Match[str]) -> str:
    value = found.group("value")
    if value.startswith("<") and value.endswith(">"):
        return found.group(0)  # already a marker
    return f"{found.group('name')}{found.group('sep')}<redacted>"


def child_env(needed: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
              *, drop: Iterable[str] = ()) -> dict[str, str]:
    """The environment for a child that needs no credential: `env` less credentials, plus `needed`."""
    env = os.environ if env is None else env
    secret = set(credential_names(env)) | set(drop)
    clean = {name: value for name, value in env.items() if name not in secret}
    clean.update(needed or {})
    return clean
