"""Where a cluster's Pulumi state lives, and the passphrase that protects its secrets.

- State backend: Pulumi's local file backend under `<gpuctl home>/clusters/<name>/pulumi` by
  default; any backend URL Pulumi takes (s3://, OSS through its S3-compatible endpoint,
  https://api.pulumi.com ...) from `--backend` (the driver's `backend_url`) or
  `GPUCTL_PULUMI_BACKEND`, the option first. A URL that carries a credential is refused, and
  never echoed: its user, password and credential parameters are masked in the message.
- Secrets: the passphrase provider (Pulumi's default off Pulumi Cloud), passphrase from
  `PULUMI_CONFIG_PASSPHRASE` / `PULUMI_CONFIG_PASSPHRASE_FILE`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from toolkit.errors import MissingToolError, UsageError
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir

BACKEND_ENV = "GPUCTL_PULUMI_BACKEND"
PASSPHRASE_ENVS = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")
# Query parameters of a backend URL that carry a signature or a key (compared in lower case), and
# any other whose name says so. Azure SAS: with `sig` present, its other fields are part of it.
SECRET_PARAMS = frozenset({
    "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "accesskeyid",
    "ossaccesskeyid", "security-token", "token", "key", "secret", "password", "credential", "sas",
})
SAS_PARAMS = frozenset({"sv", "ss", "srt", "sp", "se", "st", "spr", "sr", "si", "sdd", "skoid", "sktid",
                        "skt", "ske", "sks", "skv"})
_SECRET_PARAM = re.compile(r"secret|passw|token|access[_-]?key|credential|signature", re.IGNORECASE)
# Where a backend's credential belongs instead, by URL scheme.
CREDENTIAL_HOMES = {
    "s3": "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (for s3:// and for OSS through its S3 endpoint)",
    "https": "PULUMI_ACCESS_TOKEN (Pulumi Cloud)",
    "http": "PULUMI_ACCESS_TOKEN (Pulumi Cloud)",
    "azblob": "AZURE_STORAGE_KEY (azblob://)",
    "gs": "GOOGLE_CREDENTIALS (gs://)",
}
ALL_CREDENTIAL_HOMES = ("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for s3:// and OSS, PULUMI_ACCESS_TOKEN for "
                        "Pulumi Cloud, AZURE_STORAGE_KEY for azblob://")


def backend_url(spec: ClusterSpec, override: str | None = None, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    url = override or env.get(BACKEND_ENV)
    if url:
        return check_backend_url(url)
    return f"file://{cluster_dir(spec.name) / 'pulumi'}"


def check_backend_url(url: str) -> str:
    """A backend URL goes into the workspace's Pulumi.yaml, progress lines and `status`: refuse one
    that carries a credential: any user or password in it, or a query parameter that carries a
    signature or a key (SECRET_PARAMS, case-insensitive, and look-alikes such as `secret_key`)."""
    parts = urlsplit(url)
    if not parts.scheme or "://" not in url:
        raise UsageError(
            f"'{_masked_userinfo(url)}' is not a Pulumi backend URL",
            hint="give one such as s3://bucket/path, s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com "
            "(OSS), file:///path or https://api.pulumi.com",
        )
    userinfo = "@" in parts.netloc
    secret = _secret_params(parts.query)
    if userinfo or secret:
        what = (["a user name or password"] if userinfo else []) + (
            [f"the parameter(s) {', '.join(dict.fromkeys(secret))}"] if secret else []
        )
        home = CREDENTIAL_HOMES.get(parts.scheme.lower())
        raise UsageError(
            f"the backend URL {_masked_url(url)} carries a credential ({' and '.join(what)}); gpuctl keeps "
            "credentials out of URLs, files and logs",
            hint=f"remove it from the URL and export it instead: {home or ALL_CREDENTIAL_HOMES}",
        )
    return url


def _secret_params(query: str) -> list[str]:
    """The names (as written) of the query parameters that carry a credential."""
    names = [unquote_plus(raw.partition("=")[0]) for raw in query.split("&") if raw]
    lowered = {name.lower() for name in names}
    sas = "sig" in lowered
    return [
        name for name in names
        if name.lower() in SECRET_PARAMS or _SECRET_PARAM.search(name) or (sas and name.lower() in SAS_PARAMS)
    ]


def _masked_url(url: str) -> str:
    """`url` with its user/password and the values of credential parameters replaced by ***."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    secret = set(_secret_params(parts.query))
    query = "&".join(
        f"{raw.partition('=')[0]}=***" if unquote_plus(raw.partition("=")[0]) in secret else raw
        for raw in parts.query.split("&")
    ) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _masked_userinfo(text: str) -> str:
    """Text that is not a URL, with anything before an `@` (it may be `key:secret@`) replaced."""
    return "***@" + text.rpartition("@")[2] if "@" in text else text


def passphrase_problem(url: str, env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    if url.startswith(("https://", "http://")):  # Pulumi Cloud / self-hosted service: its own secrets
        return None
    if any(name in env for name in PASSPHRASE_ENVS):
        return None
    return ("the Pulumi state passphrase is not set: export PULUMI_CONFIG_PASSPHRASE (or "
            "PULUMI_CONFIG_PASSPHRASE_FILE); it protects secrets in the state, and the same value is needed "
            "for every later up/down")


def require_passphrase(url: str, env: Mapping[str, str] | None = None) -> None:
    problem = passphrase_problem(url, env)
    if problem is not None:
        raise MissingToolError(problem, credentials=True)

