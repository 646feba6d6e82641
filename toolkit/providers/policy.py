"""Decide allow or deny for one API request under RAM (Alibaba) or CAM (Tencent) policy documents.

Pure: documents and a request in, a decision out; no cloud, no network. Tests use it to hold the
shipped policies (docs/policies/) against the calls gpuctl and its Pulumi providers make, and the
fake cloud APIs (tests/fake_cloud/) use it to refuse what the real ones refuse.

The rules, as each cloud documents them (read 2026-12-01):

- Both: every request is denied by default; a matching deny statement wins over any allow; a
  request is allowed only when an allow statement matches and no deny does. Alibaba "How RAM
  evaluates policies" (https://help.aliyun.com/en/ram/policy-evaluation-process), Tencent CAM
  "Evaluation Logic" (https://intl.cloud.tencent.com/document/product/598/10605).
- A statement matches when its action, its resource and every one of its conditions match.
  Action and Resource are a string or a list of strings; `*` matches any run of characters (none
  included) and `?` exactly one. Alibaba "Policy structure and syntax"
  (https://www.alibabacloud.com/help/en/ram/policy-structure-and-syntax).
- RAM (`Version` "1", `Statement`, `Effect` Allow|Deny, `Action` or `NotAction`, `Resource`,
  `Condition`): element names and operators are case-sensitive (same page); action names are "in
  most cases" not (Alibaba "Policy elements", https://www.alibabacloud.com/help/doc-detail/93738.htm),
  so actions are compared without regard to case. `NotAction` matches every action it does not list.
- CAM (`version` "2.0", `statement`, `effect` allow|deny, `action`, `resource`, `condition`;
  elements lower-case: CAM "Element Reference", https://tencentcloud.com/doc/product/598/10603): an
  action is `<service>:<Action>`, optionally written `name/<service>:<Action>`; a resource is `*` or
  the six segments `qcs:project:service:region:account:resource`, where an empty service, region or
  account segment means all of them (CAM "Resource Description Method",
  https://www.tencentcloud.com/document/product/598/10606).
- Conditions: several operators in a statement must all hold; several keys under one operator must
  all hold; several values of one key are alternatives (any one). Tencent documents exactly this
  (https://tencentcloud.com/document/product/598/58421); for RAM it is paper only: the page of its
  elements says a condition block holds several conditions, the rest of that sentence was not read.
  Operators read: RAM StringEquals, StringNotEquals, StringEqualsIgnoreCase,
  StringNotEqualsIgnoreCase, StringLike, StringNotLike (https://www.alibabacloud.com/help/en/ram/
  conditional-operator) and Bool; CAM string_equal, string_not_equal, string_equal_ignore_case,
  string_not_equal_ignore_case and bool_equal, each with the set qualifiers `for_any_value:` /
  `for_all_value:` and the `_if_exist` suffix (https://tencentcloud.com/document/product/598/10608).
  Another operator or element is refused (PolicyError): a document this module cannot read is never
  read as allowing something.
- A key the request does not carry: a positive operator fails and a negated one holds, `_if_exist`
  holds (paper only for both clouds: the AWS rule, which neither cloud's pages contradict).
- Case of CAM action names and of resources on both clouds: not documented (paper only); compared
  exactly, the stricter reading (a policy that passes here passes either way).

A request names the resources it acts on (an ARN each; `*` for an action the cloud authorizes on
all resources only: then only a statement whose Resource matches `*` itself, in practice `"*"`,
allows it) and its context: condition keys to their values, e.g. `acs:ResourceTag/gpuctl:managed-by`
-> ("gpuctl",), `qcs:resource_tag` -> ("gpuctl:managed-by&gpuctl", ...). toolkit/providers/
policy_scope.py builds the requests for gpuctl's own resources.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from toolkit.errors import ParseError

Cloud = Literal["alicloud", "tencentcloud"]
ALL = "*"

# The elements each language has, and which of them a statement must have.
_RAM_ELEMENTS = frozenset({"Effect", "Action", "NotAction", "Resource", "Condition"})
_CAM_ELEMENTS = frozenset({"effect", "action", "resource", "condition"})
_RAM_STRING = {"StringEquals": "equal", "StringNotEquals": "not_equal", "StringEqualsIgnoreCase": "equal_ic",
               "StringNotEqualsIgnoreCase": "not_equal_ic", "StringLike": "like", "StringNotLike": "not_like",
               "Bool": "bool"}
_CAM_STRING = {"string_equal": "equal", "string_not_equal": "not_equal", "string_equal_ignore_case": "equal_ic",
               "string_not_equal_ignore_case": "not_equal_ic", "bool_equal": "bool"}
_NEGATED = frozenset({"not_equal", "not_equal_ic", "not_like"})
_CAM_ACTION = re.compile(r"^(?:name/)?(?P<action>[a-z0-9_-]+:[A-Za-z0-9*?]+|\*)$")


class PolicyError(ParseError):
    """A policy document this module cannot read: it names the element and why (exit 5)."""


@dataclass(frozen=True)
class Condition:
    test: str  # equal, not_equal, equal_ic, not_equal_ic, like, not_like, bool
    key: str
    values: tuple[str, ...]
    qualifier: Literal["", "any", "all"] = ""  # CAM for_any_value: / for_all_value:
    if_exist: bool = False  # CAM _if_exist

    def holds(self, context: Mapping[str, Sequence[str]]) -> bool:
        if self.key not in context:
            return self.if_exist or self.test in _NEGATED
        have = tuple(context[self.key])
        if self.qualifier == "any":
            return any(self._one(value) for value in have)
        if self.qualifier == "all":
            return all(self._one(value) for value in have)
        # A plain operator reads one value; a key with several (a resource's tag list) needs a qualifier.
        if len(have) != 1:
            return self.test in _NEGATED
        return self._one(have[0])

    def _one(self, value: str) -> bool:
        if self.test == "equal":
            return value in self.values
        if self.test == "not_equal":
            return value not in self.values
        if self.test == "equal_ic":
            return value.casefold() in {v.casefold() for v in self.values}
        if self.test == "not_equal_ic":
            return value.casefold() not in {v.casefold() for v in self.values}
        if self.test == "like":
            return any(_glob(pattern).fullmatch(value) for pattern in self.values)
        if self.test == "not_like":
            return not any(_glob(pattern).fullmatch(value) for pattern in self.values)
        return value.lower() in {v.lower() for v in self.values}  # bool: "true" / "false"


@dataclass(frozen=True)
class Statement:
    index: int  # its place in the document, from 0
    allow: bool
    actions: tuple[str, ...]  # patterns; empty with not_actions set
    not_actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[Condition, ...]
    cloud: Cloud

    def matches(self, action: str, resource: str, context: Mapping[str, Sequence[str]]) -> bool:
        return self.matches_action(action) and any(self._resource(p, resource) for p in self.resources) \
            and all(c.holds(context) for c in self.conditions)

    def matches_action(self, action: str) -> bool:
        if self.not_actions:
            return not any(self._action(p, action) for p in self.not_actions)
        return any(self._action(p, action) for p in self.actions)

    def _action(self, pattern: str, action: str) -> bool:
        return bool(_glob(pattern, ignore_case=self.cloud == "alicloud").fullmatch(action))

    def _resource(self, pattern: str, resource: str) -> bool:
        if self.cloud == "alicloud" or pattern == ALL or resource == ALL:
            return bool(_glob(pattern).fullmatch(resource))
        return _six_segments(pattern, resource)


@dataclass(frozen=True)
class Request:
    """One API call: the action, the resources it acts on (all must be allowed) and the condition context."""

    action: str
    resources: tuple[str, ...] = (ALL,)
    context: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    why: str  # "allowed by <policy> statement 2", "denied by ... statement 0", "no statement allows it"
    resource: str = ALL  # the resource the decision is about (the first one refused, when refused)


@dataclass(frozen=True)
class Policy:
    cloud: Cloud
    name: str  # for messages: a file name or "the instance role"
    statements: tuple[Statement, ...]

    def decide(self, request: Request) -> Decision:
        return decide([self], request)


def decide(policies: Iterable[Policy], request: Request) -> Decision:
    """The decision of every attached policy together: for each resource, a matching deny in any of
    them refuses, else a matching allow in any of them allows, else it is refused (the default)."""
    attached = list(policies)
    allowed_by = ""
    for resource in request.resources:
        allow = None
        for policy in attached:
            for statement in policy.statements:
                if not statement.matches(request.action, resource, request.context):
                    continue
                where = f"{policy.name} statement {statement.index}"
                if not statement.allow:
                    return Decision(False, f"denied by {where}", resource)
                allow = allow or where
        if allow is None:
            return Decision(False, "no statement allows it", resource)
        allowed_by = allowed_by or allow
    return Decision(True, f"allowed by {allowed_by}")


def parse(document: Mapping[str, Any] | str, cloud: Cloud, *, name: str = "the policy") -> Policy:
    """A RAM ("alicloud") or CAM ("tencentcloud") identity policy document (a dict or its JSON text)."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError as exc:
            raise PolicyError(f"not JSON: {exc}", source=name) from None
    if not isinstance(document, Mapping):
        raise PolicyError("the document is not a JSON object", source=name)
    return _parse_ram(document, name) if cloud == "alicloud" else _parse_cam(document, name)


def _parse_ram(document: Mapping[str, Any], name: str) -> Policy:
    _only(document, {"Version", "Statement"}, name, "the document")
    if document.get("Version") != "1":
        raise PolicyError(f"Version is {document.get('Version')!r}; RAM takes \"1\"", source=name)
    statements = []
    for index, raw in enumerate(_list(document.get("Statement"), name, "Statement")):
        where = f"Statement[{index}]"
        if not isinstance(raw, Mapping):
            raise PolicyError(f"{where} is not an object", source=name)
        _only(raw, _RAM_ELEMENTS, name, where)
        effect = raw.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise PolicyError(f"{where}.Effect is {effect!r}; RAM takes Allow or Deny", source=name)
        if ("Action" in raw) == ("NotAction" in raw):
            raise PolicyError(f"{where} needs exactly one of Action and NotAction", source=name)
        if "Resource" not in raw:
            raise PolicyError(f"{where} has no Resource", source=name)
        statements.append(Statement(
            index=index, allow=effect == "Allow",
            actions=_strings(raw["Action"], name, f"{where}.Action") if "Action" in raw else (),
            not_actions=_strings(raw["NotAction"], name, f"{where}.NotAction") if "NotAction" in raw else (),
            resources=_strings(raw["Resource"], name, f"{where}.Resource"),
            conditions=_conditions(raw.get("Condition", {}), _RAM_STRING, name, f"{where}.Condition", cam=False),
            cloud="alicloud",
        ))
    return Policy("alicloud", name, tuple(statements))


def _parse_cam(document: Mapping[str, Any], name: str) -> Policy:
    _only(document, {"version", "statement"}, name, "the document")
    if document.get("version") != "2.0":
        raise PolicyError(f"version is {document.get('version')!r}; CAM takes \"2.0\"", source=name)
    statements = []
    for index, raw in enumerate(_list(document.get("statement"), name, "statement")):
        where = f"statement[{index}]"
        if not isinstance(raw, Mapping):
            raise PolicyError(f"{where} is not an object", source=name)
        _only(raw, _CAM_ELEMENTS, name, where)
        effect = raw.get("effect")
        if effect not in ("allow", "deny"):
            raise PolicyError(f"{where}.effect is {effect!r}; CAM takes allow or deny", source=name)
        for required in ("action", "resource"):
            if required not in raw:
                raise PolicyError(f"{where} has no {required}", source=name)
        actions = []
        for action in _strings(raw["action"], name, f"{where}.action"):
            match = _CAM_ACTION.match(action)
            if match is None:
                raise PolicyError(f"{where}.action {action!r} is not <service>:<Action> (a permid/ feature set "
                                  "is not read here)", source=name)
            actions.append(match["action"])
        statements.append(Statement(
            index=index, allow=effect == "allow", actions=tuple(actions), not_actions=(),
            resources=_strings(raw["resource"], name, f"{where}.resource"),
            conditions=_conditions(raw.get("condition", {}), _CAM_STRING, name, f"{where}.condition", cam=True),
            cloud="tencentcloud",
        ))
    return Policy("tencentcloud", name, tuple(statements))


def _conditions(raw: Any, operators: Mapping[str, str], name: str, where: str, *, cam: bool) -> tuple[Condition, ...]:
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{where} is not an object", source=name)
    found = []
    for operator, keys in raw.items():
        qualifier: Literal["", "any", "all"] = ""
        base, if_exist = str(operator), False
        if cam:
            for prefix, value in (("for_any_value:", "any"), ("for_all_value:", "all")):
                if base.startswith(prefix):
                    base, qualifier = base.removeprefix(prefix), value  # type: ignore[assignment]
            if base.endswith("_if_exist"):
                base, if_exist = base.removesuffix("_if_exist"), True
        if base not in operators:
            raise PolicyError(f"{where}: operator {operator!r} is not one this evaluator reads "
                              f"({', '.join(operators)})", source=name)
        if not isinstance(keys, Mapping) or not keys:
            raise PolicyError(f"{where}.{operator} is not an object of condition keys", source=name)
        for key, values in keys.items():
            found.append(Condition(operators[base], str(key), _values(values, name, f"{where}.{operator}.{key}"),
                                   qualifier, if_exist))
    return tuple(found)


def _only(raw: Mapping[str, Any], known: frozenset[str] | set[str], name: str, where: str) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise PolicyError(f"{where} has {', '.join(map(repr, unknown))}, not an element of this policy language "
                          f"({', '.join(sorted(known))})", source=name)


def _list(value: Any, name: str, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise PolicyError(f"{where} is not a list of statements", source=name)
    return value


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise PolicyError(f"{where} is not a string or a list of strings", source=name)
    return tuple(items)


def _values(value: Any, name: str, where: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str | bool | int | float) for v in items):
        raise PolicyError(f"{where} is not a value or a list of values", source=name)
    return tuple(str(v).lower() if isinstance(v, bool) else str(v) for v in items)


@cache
def _glob(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """`*` any run of characters, `?` one character, everything else literal."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def _six_segments(pattern: str, resource: str) -> bool:
    """CAM: qcs:project:service:region:account:resource; an empty service, region or account in the
    pattern means all; the project segment is legacy and not compared."""
    want, have = pattern.split(":", 5), resource.split(":", 5)
    if len(want) != 6 or len(have) != 6 or want[0] != "qcs" or have[0] != "qcs":
        return bool(_glob(pattern).fullmatch(resource))
    for segment in (2, 3, 4):
        if want[segment] and not _glob(want[segment]).fullmatch(have[segment]):
            return False
    return bool(_glob(want[5]).fullmatch(have[5]))
