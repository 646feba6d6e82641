"""`NcclConfig`: the tuned NCCL settings of one node, each with its layer, reason and source.

Rendered three ways: `/etc/nccl.conf` (NCCL reads it natively at init; the one copy gpuctl
installs), shell exports (`gpuctl tune --format env`, for a job that cannot read nccl.conf), and
JSON for `gpuctl tune --json`.

Why the renderers are strict:
- NCCL's parser (src/misc/param.cc, `setEnvFile`) splits a line at the first `=` and takes the
  rest of the line verbatim as the value: quotes, trailing blanks and all. So a value is written
  bare and must not carry whitespace at either end or a newline.
- Older NCCL releases have no `#` check in that parser: any line containing `=` becomes a
  variable, comment or not. Comments therefore never contain `=` (it is spelled "equals").
- NCCL calls `setenv(..., 0)` for file values, so the process environment always wins over
  `/etc/nccl.conf`; that is why gpuctl installs no env file (it would override every edit of
  nccl.conf) and the env rendering is only printed on request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from toolkit.comment import comment_text

Layer = Literal["nccl-default", "vendor-profile", "topology-rule", "user-override"]
LAYERS: tuple[Layer, ...] = ("nccl-default", "vendor-profile", "topology-rule", "user-override")

_NAME = re.compile(r"NCCL_[A-Z0-9_]+")


@dataclass(frozen=True)
class Replaced:
    """A value a higher layer replaced, kept so `explain` can show the whole chain."""

    layer: Layer
    value: str
    source: str


@dataclass(frozen=True)
class NcclSetting:
    name: str
    value: str
    layer: Layer
    reason: str
    source: str
    replaced: tuple[Replaced, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"{self.name!r} is not an NCCL variable name (NCCL_[A-Z0-9_]+)")
        # A newline would end the value and start a line of its own; a \r is part of the value for
        # NCCL 2.26 and dropped by 2.30 (setEnvFile), so the same file would mean two things.
        if self.value != self.value.strip() or "\n" in self.value or "\r" in self.value:
            # NCCL would take the blanks as part of the value (see module docstring).
            raise ValueError(f"{self.name}: value {self.value!r} has surrounding blanks or a newline")
        if self.layer not in LAYERS:
            raise ValueError(f"{self.name}: unknown layer {self.layer!r}")

    @property
    def pinned(self) -> bool:
        """Whether gpuctl writes it. A bare NCCL default is shown, not pinned: pinning it would
        freeze today's default into a node that may later run another NCCL."""
        return self.layer != "nccl-default"


@dataclass
class NcclConfig:
    """Ordered settings (first set, first listed) plus what the tuner noticed."""

    hostname: str | None = None
    nccl_version: str | None = None
    fabric: str | None = None
    vendor_profile: str | None = None
    # The NCCL net plugin the node shows (NCCL log line or plugin file), with where it was seen.
    net_plugin: str | None = None
    settings: dict[str, NcclSetting] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Vendor-published variable -> why gpuctl's value differs from (or omits) the vendor's.
    vendor_differences: dict[str, str] = field(default_factory=dict)

    def set(self, setting: NcclSetting) -> None:
        """Apply a setting; a lower layer never replaces a higher one."""
        old = self.settings.get(setting.name)
        if old is not None:
            if LAYERS.index(setting.layer) < LAYERS.index(old.layer):
                return
            chain = (*old.replaced, Replaced(old.layer, old.value, old.source))
            setting = replace(setting, replaced=chain)
        self.settings[setting.name] = setting

    def remove(self, name: str) -> None:
        self.settings.pop(name, None)

    def get(self, name: str) -> NcclSetting | None:
        return self.settings.get(name)

    def value(self, name: str) -> str | None:
        setting = self.settings.get(name)
        return setting.value if setting is not None else None

    def pinned(self) -> list[NcclSetting]:
        return [s for s in self.settings.values() if s.pinned]

    # ------------------------------------------------------------------ renderers

    def _header(self, what: str) -> list[str]:
        # The node's name and NCCL version come from its captures: data, so each line is a _comment.
        return [
            f"# {what} written by gpuctl (gpuctl tune). Do not edit by hand: re-run gpuctl tune.",
            _comment(f"node: {self.hostname or 'unknown'}"),
            _comment(f"NCCL version tuned for: {self.nccl_version or 'unknown'}"),
            _comment(f"fabric: {self.fabric or 'unknown'}; vendor profile: {self.vendor_profile or 'none'}"),
            "# Layers, lowest first: nccl-default < vendor-profile < topology-rule < user-override.",
        ]

    def render_nccl_conf(self) -> str:
        lines = self._header("/etc/nccl.conf")
        for note in self.notes:
            lines.append(_comment(f"note: {note}"))
        for setting in self.settings.values():
            lines.append("")
            lines.append(_comment(f"{setting.layer}: {setting.reason}"))
            lines.append(_comment(f"source: {setting.source}"))
            for old in setting.replaced:
                lines.append(_comment(f"replaces {old.layer} value {old.value}"))
            if setting.pinned:
                lines.append(f"{setting.name}={setting.value}")
            else:
                lines.append(_comment(f"{setting.name} is {setting.value} by NCCL's default; not pinned"))
        return "\n".join(lines) + "\n"

    def render_env(self) -> str:
        # Not "/etc/profile.d/nccl.sh written by gpuctl": the nccl_conf role removes a file with that
        # header (what gpuctl used to install); this one is only ever installed by a person's choice.
        lines = ["#!/bin/sh", *self._header("NCCL environment (gpuctl tune --format env)")]
        for setting in self.pinned():
            lines.append(_comment(f"{setting.layer}: {setting.reason}"))
            lines.append(f'export {setting.name}="{_sh_double_quote(setting.value)}"')
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {
            s.name: {
                "value": s.value,
                "layer": s.layer,
                "reason": s.reason,
                "source": s.source,
                "pinned": s.pinned,
                "replaced": [{"layer": r.layer, "value": r.value, "source": r.source} for r in s.replaced],
            }
            for s in self.settings.values()
        }

    def to_document(self) -> dict[str, Any]:
        """Everything `explain` shows, as JSON: what configure keeps per node as explain.json."""
        return {
            "hostname": self.hostname, "nccl_version": self.nccl_version, "fabric": self.fabric,
            "vendor_profile": self.vendor_profile, "net_plugin": self.net_plugin,
            "settings": self.to_json(), "notes": list(self.notes),
            "vendor_differences": dict(self.vendor_differences),
        }

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> NcclConfig:
        """The inverse of to_document (raises ValueError/KeyError/TypeError on a damaged document)."""
        config = cls(hostname=document.get("hostname"), nccl_version=document.get("nccl_version"),
                     fabric=document.get("fabric"), vendor_profile=document.get("vendor_profile"),
                     net_plugin=document.get("net_plugin"),
                     notes=[str(n) for n in document.get("notes", [])],
                     vendor_differences={str(k): str(v) for k, v in document.get("vendor_differences", {}).items()})
        for name, item in document["settings"].items():
            replaced = tuple(Replaced(r["layer"], str(r["value"]), str(r["source"])) for r in item.get("replaced", []))
            config.settings[name] = NcclSetting(name, str(item["value"]), item["layer"], str(item["reason"]),
                                                str(item["source"]), replaced)
        return config


def _comment(text: str) -> str:
    # One line (blanks and line breaks become one space, any other control character its \uXXXX),
    # and no '=' (older NCCL parses any line with '=' as a variable).
    flat = " ".join(text.replace("=", " equals ").split())
    return f"# {comment_text(flat)}"


def _sh_double_quote(value: str) -> str:
    # Inside "...", only \ " $ and ` are special to a POSIX shell.
    return re.sub(r'([\\"$`])', r"\\\1", value)
