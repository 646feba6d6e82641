"""The API actions each cloud's Pulumi provider really calls, read from the providers' source.

The data lives next to each provider (`toolkit/providers/<cloud>/api_actions.yaml`): per Pulumi type
token (resources and invokes) and phase, the cloud's authorization action (RAM / CAM), the API and
the file:line of the call in the provider version read; plus the provider's own calls at start-up and
what the nodes' instance role is used for (the lifecycle agent, ossfs / cosfs). Each file's header
names the versions and commits read and the date. Pure: reading package data, no cloud, no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolkit.errors import GpuctlError

Phase = Literal["create", "read", "update", "delete"]
PHASES: tuple[Phase, ...] = get_args(Phase)
CLOUDS = ("alicloud", "tencentcloud")
# Where a call is: <repo>@<tag or commit>:<path>:<line>; <repo> is owner/name on GitHub, or gpuctl.
WHERE = re.compile(r"^(?P<repo>[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?)@(?P<rev>[A-Za-z0-9._+-]+)"
                   r":(?P<path>[^:\s]+):(?P<line>[1-9][0-9]*)$")
# How the data marks a condition gpuctl's programs never meet.
NEVER_BY_GPUCTL = "(gpuctl: never"
# A RAM / CAM action: <service>:<Action>.
ACTION = re.compile(r"^[a-z]+:[A-Za-z0-9]+$")


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Call(_Data):
    """One API call: the authorization action it needs, the API it is, where it is made."""

    action: str = Field(pattern=ACTION.pattern)
    api: str
    where: str = Field(pattern=WHERE.pattern)
    when: str | None = None  # the condition; absent: made every time its phase runs
    note: str | None = None
    ref: str | None = None  # the authorization page read for the action's name

    @property
    def gpuctl_triggers(self) -> bool:
        """False for a call that the arguments gpuctl's programs set never trigger (the data marks its
        condition "(gpuctl: never ...)")."""
        return NEVER_BY_GPUCTL not in (self.when or "")


def _unique(calls: tuple[Call, ...], what: str) -> tuple[Call, ...]:
    seen: set[str] = set()
    for call in calls:
        if call.action in seen:
            raise ValueError(f"{what}: {call.action} is listed twice")
        seen.add(call.action)
    return calls


class PassesRole(_Data):
    """An authorization the cloud checks besides the call's own action ("associated operation"): a
    resource given a role (an instance's RAM / CAM role) needs PassRole on that role, when created."""

    input: str  # the Pulumi input that names the role (roleName, ramRoleName, camRoleName)
    action: str = Field(pattern=ACTION.pattern)  # ram:PassRole / cam:PassRole
    ref: str  # the cloud's page that says so


class Entry(_Data):
    """A resource type or invoke: its Terraform name, the file read, its calls per phase."""

    terraform: str
    file: str
    note: str | None = None
    passes_role: PassesRole | None = None
    create: tuple[Call, ...] = ()
    read: tuple[Call, ...] = ()
    update: tuple[Call, ...] = ()
    delete: tuple[Call, ...] = ()

    @model_validator(mode="after")
    def _each_action_once_per_phase(self) -> Entry:
        for phase in PHASES:
            _unique(getattr(self, phase), f"{self.terraform} {phase}")
        return self

    def calls(self, phase: Phase) -> tuple[Call, ...]:
        calls: tuple[Call, ...] = getattr(self, phase)
        return calls


class ApiActions(_Data):
    provider: Literal["alicloud", "tencentcloud"]
    read_on: str
    where_form: str
    sources: dict[str, dict[str, str]]
    provider_calls: tuple[Call, ...] = ()
    resources: dict[str, Entry]
    invokes: dict[str, Entry]
    instance_role: dict[str, tuple[Call, ...]] = Field(default_factory=dict)

    @field_validator("instance_role")
    @classmethod
    def _each_action_once_per_user(cls, value: dict[str, tuple[Call, ...]]) -> dict[str, tuple[Call, ...]]:
        for user, calls in value.items():
            _unique(calls, f"instance_role {user}")
        return value

    def entry(self, type_token: str) -> Entry:
        found = self.resources.get(type_token) or self.invokes.get(type_token)
        if found is None:
            raise GpuctlError(f"no API actions recorded for {type_token} ({self.provider}); "
                              f"toolkit/providers/{self.provider}/api_actions.yaml lists what gpuctl creates")
        return found


@cache
def load(provider: str) -> ApiActions:
    """The provider's data file, validated (a broken shipped file is a gpuctl bug, said as such)."""
    if provider not in CLOUDS:
        raise GpuctlError(f"no API action data for provider '{provider}'; known: {', '.join(CLOUDS)}")
    text = resources.files(f"toolkit.providers.{provider}").joinpath("api_actions.yaml").read_text("utf-8")
    try:
        return ApiActions.model_validate(yaml.safe_load(text))
    except ValidationError as exc:
        raise GpuctlError(f"API action data for {provider} is invalid (a gpuctl bug): {exc}") from None


def actions(provider: str, type_token: str, phases: Iterable[str] = PHASES) -> tuple[Call, ...]:
    """The calls `type_token` (a resource type or an invoke) makes in `phases`, in phase order; an action
    called in several phases is given once, with its first call."""
    wanted = tuple(phases)
    unknown = [p for p in wanted if p not in PHASES]
    if unknown:
        raise GpuctlError(f"unknown phase {', '.join(unknown)}; phases: {', '.join(PHASES)}")
    entry = load(provider).entry(type_token)
    found: dict[str, Call] = {}
    for phase in PHASES:
        if phase in wanted:
            for call in entry.calls(phase):
                found.setdefault(call.action, call)
    return tuple(found.values())


def instance_role(provider: str) -> Mapping[str, tuple[Call, ...]]:
    """What the nodes' instance role is used for, per user (lifecycle_agent, ossfs / cosfs)."""
    return load(provider).instance_role
