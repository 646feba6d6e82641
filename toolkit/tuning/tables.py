"""Loading the tuning tables in `toolkit/tuning/data/` (package data, read once per process)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml

Version = tuple[int, ...]
Take = Literal["set", "detect", "skip"]


def parse_version(text: str) -> Version:
    """'2.26.2' -> (2, 26, 2); also accepts '2.26.2-1', 'v2.22.3+cuda12.6'."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not an NCCL version like 2.26.2")
    return tuple(int(part) for part in match.groups() if part is not None)


@dataclass(frozen=True)
class DefaultRow:
    name: str
    since: Version
    until: Version | None
    value: str
    source: str
    note: str

    def applies(self, version: Version) -> bool:
        return self.since <= version[:2] and (self.until is None or version[:2] < self.until)


@dataclass(frozen=True)
class Published:
    name: str
    value: str
    take: Take
    why: str


@dataclass(frozen=True)
class Observed:
    """A value seen on the vendor's nodes but not published by the vendor: documented, never applied."""

    name: str
    value: str
    where: str
    why_not: str


@dataclass(frozen=True)
class VendorProfile:
    id: str
    provider: str
    fabric: str
    title: str
    source: str
    published: tuple[Published, ...]
    min_nccl: Version | None
    constraints: dict[str, Any]
    note: str
    read: str = ""  # the date the vendor's pages were read (YYYY-MM-DD)
    observed: tuple[Observed, ...] = ()
    # What the vendor publishes about its own NCCL-based library (Tencent TCCL): package, checksum.
    library: dict[str, Any] = field(default_factory=dict)


def _load(name: str) -> Any:
    text = resources.files("toolkit.tuning").joinpath("data", name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


@lru_cache(maxsize=1)
def nccl_default_rows() -> tuple[DefaultRow, ...]:
    data = _load("nccl_defaults.yaml")
    rows = []
    for name, entries in data["variables"].items():
        for entry in entries:
            rows.append(
                DefaultRow(
                    name=name,
                    since=parse_version(str(entry["since"])),
                    until=parse_version(str(entry["until"])) if entry.get("until") else None,
                    value=str(entry["value"]),
                    source=str(entry["source"]),
                    note=" ".join(str(entry.get("note", "")).split()),
                )
            )
    return tuple(rows)


def nccl_defaults(version: Version) -> list[DefaultRow]:
    """The documented default of each variable we tune, for this NCCL version."""
    return [row for row in nccl_default_rows() if row.applies(version)]


@lru_cache(maxsize=1)
def vendor_profiles() -> tuple[VendorProfile, ...]:
    data = _load("vendor_profiles.yaml")
    profiles = []
    for entry in data["profiles"]:
        published = tuple(
            Published(name=p["name"], value=str(p["value"]), take=p["take"], why=_flat(p["why"]))
            for p in entry.get("published") or []
        )
        observed = tuple(
            Observed(name=o["name"], value=str(o["value"]), where=str(o["where"]), why_not=_flat(o["why_not"]))
            for o in entry.get("observed") or []
        )
        profiles.append(
            VendorProfile(
                id=entry["id"],
                provider=entry["provider"],
                fabric=entry["fabric"],
                title=entry["title"],
                source=entry["source"],
                published=published,
                min_nccl=parse_version(str(entry["min_nccl"])) if entry.get("min_nccl") else None,
                constraints=dict(entry.get("constraints") or {}),
                note=_flat(entry.get("note", "")),
                read=str(entry.get("read") or data["read"]),
                observed=observed,
                library=dict(entry.get("library") or {}),
            )
        )
    return tuple(profiles)


def _flat(text: object) -> str:
    return " ".join(str(text).split())


def _base(url: str) -> str:
    return url.split("#", 1)[0]


@lru_cache(maxsize=1)
def source_read_dates() -> dict[str, str]:
    """Page (URL without its #anchor) -> the date the tables record reading it."""
    dates: dict[str, str] = {}
    defaults = _load("nccl_defaults.yaml")
    for entries in defaults["variables"].values():
        for entry in entries:
            dates[_base(str(entry["source"]))] = str(defaults["read"])
    for profile in vendor_profiles():
        dates[_base(profile.source)] = profile.read
        constraint_source = profile.constraints.get("source")
        if constraint_source:
            dates[_base(str(constraint_source))] = profile.read
    return dates


def dated(source: str) -> str:
    """`source` with the date it was read appended, where the tables record one: "URL (read DATE)".

    A source that already carries a date, names no page, or is a page no table records, is
    returned as it is (gpuctl never guesses when a page was read)."""
    if "(read " in source or not source.startswith(("http://", "https://")):
        return source
    date = source_read_dates().get(_base(source))
    return f"{source} (read {date})" if date else source


def vendor_profile_for(fabric: str, provider: str | None) -> VendorProfile | None:
    """eRDMA exists only on Alibaba, so fabric alone picks it; RoCE needs the provider."""
    candidates = [p for p in vendor_profiles() if p.fabric == fabric]
    if provider is not None:
        candidates = [p for p in candidates if p.provider == provider]
    return candidates[0] if len(candidates) == 1 else None


def vendor_profile_by_id(profile_id: str) -> VendorProfile:
    for profile in vendor_profiles():
        if profile.id == profile_id:
            return profile
    known = ", ".join(p.id for p in vendor_profiles())
    raise KeyError(f"no vendor profile {profile_id!r} (known: {known})")
