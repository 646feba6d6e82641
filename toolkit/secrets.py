"""Credentials gpuctl must never write, print or pass on: one list, one redaction, one clean environment.

gpuctl reads cloud and state-backend credentials from the environment only. Three rules follow,
each implemented here once and used everywhere:

- `redact(text)` replaces the value of every credential variable with `<NAME>`; the CLI applies it
  to every error it prints, and the Pulumi and Ansible paths to what they echo.
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


def credential_names(env: Mapping[str, str] | None = None) -> list[str]:
    """The names in `env` that hold a credential (documented ones first, then look-alikes)."""
    env = os.environ if env is None else env
    named = [name for name in CREDENTIAL_ENVS if env.get(name)]
    return named + sorted(n for n in env if n not in CREDENTIAL_ENVS and _SECRET_NAME.search(n) and env.get(n))


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every credential value from `env` (default: this process's) replaced by `<NAME>`."""
    env = os.environ if env is None else env
    values = [(env[name], name) for name in credential_names(env) if len(env[name]) >= MIN_SECRET_LENGTH]
    # Longest first, so a secret that contains another is replaced whole.
    for value, name in sorted(values, key=lambda pair: -len(pair[0])):
        text = text.replace(value, f"<{name}>")
    return text


def child_env(needed: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
              *, drop: Iterable[str] = ()) -> dict[str, str]:
    """The environment for a child that needs no credential: `env` less credentials, plus `needed`."""
    env = os.environ if env is None else env
    secret = set(credential_names(env)) | set(drop)
    clean = {name: value for name, value in env.items() if name not in secret}
    clean.update(needed or {})
    return clean
