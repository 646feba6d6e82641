"""The JSON documents that `--json` prints: one model per command, one schema per model.

Each command that reports prints exactly one of these documents on stdout (progress and human text
go to stderr). `docs/schemas/<command>.json` is generated from these models (`write_schemas`, run
by `GPUCTL_UPDATE_GOLDEN=1 pytest tests/cli/test_json.py`), and docs/json.md describes every field;
the tests check both that the files match the models and that real output validates against them.

Times are ISO 8601 in UTC with a `Z` (`2025-06-01T08:00:00Z`). A value gpuctl does not know is
`null`, never a made-up number (a cost is null when a price is unknown, never 0).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.choose.report import ChooseReport
from toolkit.images.store import ImageRecord
from toolkit.plan import Plan
from toolkit.prices.refresh import PricesReport
from toolkit.providers.base import ClusterOutputs

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def utc_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------------------------ validate


class SpecCheck(_Doc):
    path: str = Field(description="the spec file as given on the command line")
    ok: bool = Field(description="true when the spec passed the schema and catalog checks")
    exit_code: int = Field(
        description="0 when ok, else the exit code of this spec's failure: 2 unreadable file, 3 schema, 4 catalog")
    cluster: str | None = Field(description="the spec's name; null when it could not be read")
    provider: str | None = Field(description="alicloud, tencentcloud or local; null when the spec could not be read")
    nodes: int | None = Field(description="node count over all pools; null when the spec could not be read")
    fabric: str | None = Field(description="erdma, rdma or tcp; null when the spec could not be read")
    warnings: list[str] = Field(description="catalog warnings: the spec is valid but something deserves a look")
    problems: list[str] = Field(description="one line per problem, `file:line: key.path: what and how to fix`")


class ValidateReport(_Doc):
    ok: bool = Field(description="true when every spec is valid")
    specs: list[SpecCheck] = Field(description="one entry per SPEC argument, in order")


# ------------------------------------------------------------------------------------ configure


class NodeConfigure(_Doc):
    name: str
    result: Literal["verified", "ok", "failed"] = Field(
        description="verified: unchanged inputs and the node checked out, nothing ran; ok: the playbooks ran "
        "and finished; failed: a task failed or the node was unreachable")
    changed: int = Field(description="tasks that changed something on the node (0 when verified)")
    reason: str | None = Field(description="why the playbooks ran on this node (null when verified or with --full)")
    failed_task: str | None = Field(description="role and task that failed; null unless failed")
    message: str | None = Field(description="the failure's message; null unless failed")
    roles: dict[str, str] = Field(description="role -> ok, changed, skipped (why) or failed; empty when verified")
    notes: list[str] = Field(description="role notes, e.g. why a GPU role skipped a lab node")


class ConfigureReport(_Doc):
    cluster: str
    ok: bool = Field(description="true when every node is verified or ok (the exit code is then 0, else 8)")
    changed: int = Field(description="changed tasks over all nodes")
    finished_at: str = Field(description="when the run ended, UTC")
    nodes: list[NodeConfigure]


# ------------------------------------------------------------------------------------ up / down


class MtuCheck(_Doc):
    node: str
    verdict: str = Field(description="what the do-not-fragment ping at the fabric MTU to the node's peers found")


class UpReport(_Doc):
    cluster: str
    provider: str
    already_existed: bool = Field(description="true when `up` found the cluster and only checked or finished it")
    outputs: ClusterOutputs = Field(description="the nodes and how to reach them, as in the outputs document")
    configure: ConfigureReport | None = Field(description="the configure run; null with --no-configure")
    mtu_check: list[MtuCheck] = Field(description="one entry per node; empty with --no-configure")
    nccl_conf: dict[str, str] = Field(
        description="node -> path of the tuned nccl.conf gpuctl delivered to it (on this machine)")
    removed: bool | None = Field(description="with --down-after: true once everything was removed; else null")


class DownReport(_Doc):
    cluster: str
    provider: str
    removed: bool = Field(description="true: the cluster existed and is gone, verified; false: nothing existed")
    message: str = Field(description="the same sentence the text output prints")


# ------------------------------------------------------------------------------------ status


class NodeLastConfigure(_Doc):
    result: Literal["verified", "ok", "failed", "no record"] = Field(
        description="the last configure run on this node: verified (checked, nothing ran), ok (the playbooks "
        "finished and a converge record was written), failed, or no record (never configured, or its "
        "record was dropped by a run that did not finish)")
    at: str | None = Field(description="when, UTC; null for no record")
    reason: str | None = Field(default=None, description="for failed: the step that failed and its message "
                               "(`gpuctl: pin the host key: ... offered no host key ...`); null otherwise")
    text: str = Field(description="the same in words: `verified at ...`, `ok at ...`, `failed at ...: reason`, "
                      "`no record`")


class NodeStatus(_Doc):
    name: str
    details: dict[str, str | None] = Field(
        description="what the provider reports for the node (lab: management_ip, fabric_ip, namespace, sshd, "
        "replay_capture); keys vary by provider")
    last_configure: NodeLastConfigure


class CostSoFar(_Doc):
    amount: float | None = Field(
        description="hours since creation x price per hour (+ upfront for monthly pools), rounded to 0.01; "
        "null when a price or the creation time is unknown, never a guessed 0")
    currency: str | None = Field(description="CNY or USD; null for the local lab and when unknown")
    per_hour: float | None = Field(description="the whole cluster per hour, from the catalog (as the plan prices it)")
    hours: float | None = Field(description="hours since creation; null when the creation time is unknown")
    basis: str = Field(description="how the figure was reached, or why it is unknown")


class StatusReport(_Doc):
    cluster: str
    provider: str
    phase: str = Field(description="absent (nothing exists); lab: planned, creating, up, removing; "
                       "Alibaba: present (a stack exists; see provider_status.last_update)")
    exists: bool = Field(description="false when phase is absent")
    created_at: str | None = Field(description="when the cluster was created, UTC; null when unknown")
    expires_at: str | None = Field(description="when the cloud releases it (lab: created_at + lifecycle.ttl), UTC")
    expired: bool | None = Field(description="true once expires_at has passed; null when unknown")
    ttl: str = Field(description="lifecycle.ttl of the spec")
    nodes: list[NodeStatus]
    cost_so_far: CostSoFar
    provider_status: dict[str, Any] = Field(description="the provider's own status, as it reported it")


# ------------------------------------------------------------------------------------ reap / cost


class ReapCluster(_Doc):
    cluster: str
    provider: str = Field(description="alicloud, tencentcloud or local (`unknown` for an unreadable state)")
    region: str | None
    cluster_id: str | None = Field(description="gpuctl:cluster-id of the stack or the instances; null: unknown")
    owner: str | None = Field(description="gpuctl:owner of the stack or of the instances")
    status: Literal["expired", "live", "orphaned", "unknown"] = Field(
        description="expired: past its gpuctl:expires; live: not yet; orphaned: tagged by gpuctl in the cloud but "
        "held by no state on this machine; unknown: no expiry known (a lab reaped without its spec)")
    expired: bool | None = Field(description="past expires_at (an orphaned cluster may be expired too); null: unknown")
    in_state: bool = Field(description="a cluster directory under the gpuctl home records it")
    instances: list[str] = Field(description="ids of the cloud instances tagged with it (empty when not asked)")
    created_at: str | None = Field(description="UTC; the stack's pinned creation time, else the earliest instance's")
    expires_at: str | None = Field(description="UTC; the stack's expiresAt, else the instances' gpuctl:expires tag")
    cost_so_far: CostSoFar
    action: str = Field(description="what reap did or would do with it, in words")
    commands: list[str] = Field(description="commands to inspect or remove it by hand")
    notes: list[str] = Field(description="what could not be read about it, and why")


class ReapGap(_Doc):
    provider: str
    region: str = Field(description="the region, or * when the whole cloud could not be asked")
    reason: str
    credentials: bool = Field(description="the cause is missing or refused credentials (exit 7)")


class ReapReport(_Doc):
    dry_run: bool = Field(description="true without --yes: nothing was changed")
    checked_at: str = Field(description="the clock the statuses were decided by, UTC")
    searched: list[str] = Field(description="provider/region pairs whose tag search answered")
    clusters: list[ReapCluster]
    unreachable: list[ReapGap] = Field(description="clouds and regions that could not be searched; never skipped")
    destroyed: list[str] = Field(description="clusters removed through their provider's down (with --yes)")
    released: list[str] = Field(description="instance ids released through the cloud SDK (--include-orphaned)")
    failures: list[str] = Field(description="what --yes tried and could not do")


class CostReport(_Doc):
    cluster: str
    provider: str
    exists: bool = Field(description="false when the provider holds no such cluster (spent is then null)")
    created_at: str | None
    expires_at: str | None
    ttl: str = Field(description="lifecycle.ttl of the spec")
    ttl_hours: float
    currency: str | None
    per_hour: float | None = Field(description="the whole cluster per hour, priced as the plan prices it")
    spent: CostSoFar = Field(description="spent so far: hours since creation x per_hour, as status counts it")
    projected: float | None = Field(
        description="the whole TTL: per_hour x ttl_hours + upfront (the plan's cost.for_ttl); null when unknown")
    remaining: float | None = Field(description="projected - spent.amount, never below 0; null when either is unknown")
    price_sources: list[str] = Field(description="where each pool's price came from: URL or live cache, and the date")


# ------------------------------------------------------------------------------------ image


class ImageEntry(_Doc):
    name: str
    problem: str | None = Field(description="why the image's record cannot be read (damaged); record is null then")
    record: ImageRecord | None = Field(description="the record gpuctl keeps of the image (toolkit/images/store.py)")


class ImagesReport(_Doc):
    images: list[ImageEntry] = Field(description="every baked image with a record folder in this gpuctl home, "
                                     "by name")


# ------------------------------------------------------------------------------------ schemas

DOCUMENTS: dict[str, tuple[type[BaseModel], str]] = {
    "validate": (ValidateReport, "gpuctl validate --json SPEC...: the checks of each spec"),
    "plan": (Plan, "gpuctl plan --json SPEC: resources, hardware and cost, computed offline"),
    "up": (UpReport, "gpuctl up --json SPEC: what was created and how its configuration went"),
    "configure": (ConfigureReport, "gpuctl configure --json SPEC: each node's configure result"),
    "status": (StatusReport, "gpuctl status --json SPEC: phase, expiry, last configure per node, cost so far"),
    "down": (DownReport, "gpuctl down --json SPEC: whether anything was removed"),
    "outputs": (ClusterOutputs, "gpuctl outputs --json SPEC: the nodes of a running cluster and how to reach them"),
    "prices": (PricesReport, "gpuctl prices refresh --json: the live prices read now and written to the cache"),
    "choose": (ChooseReport, "gpuctl choose --json: offers of both clouds ranked for the needs, with sources"),
    "reap": (ReapReport, "gpuctl reap --json: every cluster found in state and cloud tags, and what reap did"),
    "cost": (CostReport, "gpuctl cost --json SPEC: spent so far and projected to the TTL"),
    "image": (ImagesReport, "gpuctl image list --json: the baked images and what each holds"),
}


def schema(command: str) -> dict[str, Any]:
    model, title = DOCUMENTS[command]
    body = model.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        **{k: v for k, v in body.items() if k != "title"},
    }


def schema_text(command: str) -> str:
    return json.dumps(schema(command), indent=2, sort_keys=False) + "\n"


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for command in DOCUMENTS:
        path = directory / f"{command}.json"
        path.write_text(schema_text(command))
        written.append(path)
    return written


def dump(document: BaseModel) -> str:
    """The document as printed: indented JSON, one trailing newline."""
    return document.model_dump_json(indent=2) + "\n"
