"""Load a cluster spec from YAML, turning every problem into `file:line: key.path: what, how to fix`.

PyYAML gives values without positions, so the file is composed once into nodes to learn the line
of every key path; pydantic's error locations are then looked up in that map. Duplicate keys,
which YAML would silently collapse, are refused here, and so are numbers too long to be anything
a spec means (Python refuses to convert a 5,000-digit number, and that must not become a crash).

The YAML dialect is PyYAML's safe one with a single change: only `true` and `false` are booleans
(as in YAML 1.2), so `public_ip: yes` or `owner: no` are text, and a boolean field refuses them
instead of guessing.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from toolkit.errors import SpecError
from toolkit.files import FileError, expand_user
from toolkit.spec.files import read_small_file
from toolkit.spec.models import ClusterSpec

KeyPath = tuple[str | int, ...]
MAX_SPEC_BYTES = 1_000_000
MAX_NODES = 20_000  # a spec is a page of YAML; anything this large is not one
MAX_NUMBER_CHARS = 32  # the largest number a spec holds (a price, a size) is a few digits

_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"


class _ValueReadError(yaml.MarkedYAMLError):
    """A scalar YAML resolved (a number, a date) that Python cannot build; carries its node."""

    def __init__(self, node: yaml.Node, reason: str) -> None:
        super().__init__(problem=reason, problem_mark=node.start_mark)
        self.node = node


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader, with YAML 1.2 booleans, and values it cannot build reported with their line."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except (ValueError, ArithmeticError, TypeError, AttributeError, KeyError, IndexError) as exc:
            # e.g. `2024-13-45` (a date with month 13), `!!float abc`, `!!timestamp x`
            reason = str(exc)
            reason = reason if len(reason) <= 80 else reason[:77] + "..."
            raise _ValueReadError(node, f"cannot read this value ({reason})") from None


_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_SpecLoader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def load_spec(path: str | Path) -> ClusterSpec:
    """Read and validate the spec at `path`; raise SpecError listing every problem."""
    path = Path(path)
    # A regular file only, and never more than MAX_SPEC_BYTES read: `/dev/zero`, a FIFO or a
    # huge file is refused at once instead of hanging or filling memory.
    hint = "give the path of a cluster spec, e.g. examples/local-lab.yaml"
    raw = read_small_file(path, limit=MAX_SPEC_BYTES, what="cluster spec", hint=hint)
    spec = load_spec_bytes(raw, source=str(path))
    return _resolve_paths(spec, path.parent)


def load_spec_text(text: str, *, source: str = "<spec>") -> ClusterSpec:
    return load_spec_bytes(text.encode("utf-8"), source=source)


def load_spec_bytes(raw: bytes, *, source: str) -> ClusterSpec:
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError([f"{source}: {len(raw)} bytes is far too large for a cluster spec"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError([f"{source}: not UTF-8 text (byte {exc.start}); is this the right file?"]) from None
    if "\x00" in text:
        line_number = text.count("\n", 0, text.index("\x00")) + 1
        raise SpecError([f"{source}:{line_number}: contains NUL bytes; a spec is YAML text"])
    lines, data = _compose(text, source)
    if data is None:
        raise SpecError(
            [f"{source}: the file is empty; a spec needs at least name, provider, node_pools, network and lifecycle"],
            hint="start from one of the files in examples/",
        )
    if not isinstance(data, dict):
        raise SpecError(
            [
                f"{source}:1: the top level must be a mapping of keys (name:, provider:, ...), "
                f"not a {type(data).__name__}"
            ]
        )
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_describe(exc, lines, source)) from None


def _resolve_paths(spec: ClusterSpec, base: Path) -> ClusterSpec:
    """Paths in a spec are relative to the spec file, and `~` means the user's home."""

    def resolve(p: Path | None, where: str) -> Path | None:
        if p is None:
            return None
        try:
            p = expand_user(p, where=where)
        except FileError as error:
            raise SpecError([f"{base}: {where}: {error.reason.split(': ', 1)[-1]}"], hint=error.hint) from None
        return p if p.is_absolute() else (base / p)

    pools = [pool.model_copy(update={"capture": resolve(pool.capture, f"node_pools[{n}].capture")})
             for n, pool in enumerate(spec.node_pools)]
    ssh = spec.ssh.model_copy(update={"public_key": resolve(spec.ssh.public_key, "ssh.public_key")})
    return spec.model_copy(update={"node_pools": pools, "ssh": ssh})


def _compose(text: str, source: str) -> tuple[dict[KeyPath, int], Any]:
    """Return ({key path: 1-based line}, plain data); YAML errors become SpecError."""
    try:
        # The reader checks every character when it is built, so building it can fail too.
        loader = _SpecLoader(text)
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ":1"
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(
            [f"{source}{line}: YAML syntax error: {problem}"], hint="check indentation and quoting around that line"
        ) from None
    except yaml.reader.ReaderError as exc:
        line_number = text.count("\n", 0, exc.position) + 1
        raise SpecError(
            [f"{source}:{line_number}: character {exc.character!r} is not allowed in YAML; is this the right file?"]
        ) from None
    except yaml.YAMLError as exc:
        raise SpecError([f"{source}:1: not valid YAML ({exc})"]) from None
    except RecursionError:
        raise SpecError([f"{source}:1: nesting is too deep to be a cluster spec"]) from None
    try:
        return _build(loader, node, source)
    finally:
        loader.dispose()


def _build(loader: _SpecLoader, node: yaml.Node | None, source: str) -> tuple[dict[KeyPath, int], Any]:
    lines: dict[KeyPath, int] = {}
    paths: dict[int, KeyPath] = {}
    problems: list[str] = []
    if node is None:
        return lines, None
    try:
        _walk(node, (), lines, paths, problems, source, budget=[MAX_NODES])
    except _TooLargeError:
        raise SpecError(
            [
                f"{source}:1: expands to more than {MAX_NODES} values (recursive or nested "
                "aliases?); a cluster spec is much smaller"
            ]
        ) from None
    if problems:
        raise SpecError(problems)
    try:
        data = loader.construct_document(node)
    except _ValueReadError as exc:
        line = exc.node.start_mark.line + 1
        path = paths.get(id(exc.node))
        where = f"{_dotted(path)}: " if path is not None else ""
        raise SpecError([f"{source}:{line}: {where}{exc.problem}"], hint="quote it if it is meant as text") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ":1"
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError([f"{source}{line}: YAML error: {problem}"]) from None
    except yaml.YAMLError as exc:
        raise SpecError([f"{source}:1: not valid YAML ({exc})"]) from None
    except RecursionError:
        raise SpecError([f"{source}:1: nesting is too deep to be a cluster spec"]) from None
    return lines, data


class _TooLargeError(Exception):
    pass


def _walk(
    node: yaml.Node,
    path: KeyPath,
    lines: dict[KeyPath, int],
    paths: dict[int, KeyPath],
    problems: list[str],
    source: str,
    budget: list[int],
) -> None:
    # YAML aliases make the node graph a DAG or even a cycle (`&a [*a]`); the budget bounds the
    # walk, and with it the work pydantic would do on an alias bomb.
    budget[0] -= 1
    if budget[0] < 0 or len(path) > 50:
        raise _TooLargeError
    lines.setdefault(path, node.start_mark.line + 1)
    paths.setdefault(id(node), path)
    if isinstance(node, yaml.ScalarNode):
        _check_scalar(node, path, problems, source)
    elif isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            line = key_node.start_mark.line + 1
            if isinstance(key_node, yaml.ScalarNode):
                _check_scalar(key_node, (*path, key), problems, source)
            if key in seen:
                problems.append(
                    f"{source}:{line}: {_dotted((*path, key))}: duplicate key (first at line {seen[key]}); remove one"
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, paths, problems, source, budget)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _walk(item, (*path, index), lines, paths, problems, source, budget)


def _check_scalar(node: yaml.ScalarNode, path: KeyPath, problems: list[str], source: str) -> None:
    """Refuse, with their line, scalars nothing downstream can hold: a lone surrogate (YAML's
    "\\ud800" escape makes one; it is not text, and pydantic would garble the key path), and a
    number far longer than any a spec holds, before Python tries to convert it."""
    surrogate = next((char for char in node.value if "\ud800" <= char <= "\udfff"), None)
    if surrogate is not None:
        problems.append(
            f"{source}:{node.start_mark.line + 1}: {_dotted(path)}: contains U+{ord(surrogate):04X}, a lone "
            "surrogate that is not text; remove it"
        )
    elif node.tag in (_INT_TAG, _FLOAT_TAG) and len(node.value) > MAX_NUMBER_CHARS:
        problems.append(
            f"{source}:{node.start_mark.line + 1}: {_dotted(path)}: a number {len(node.value)} characters "
            f"long is far too large for a cluster spec (at most {MAX_NUMBER_CHARS}); write the value you mean, "
            "e.g. count: 2"
        )


def _dotted(path: KeyPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        # A key with spaces, newlines or control characters is quoted so that one problem stays
        # one line and the user can see exactly what the key was.
        name = part if re.fullmatch(r"[A-Za-z0-9_.:/-]+", part) else repr(part)
        out += f".{name}" if out else name
    return out or "(top level)"


def _line_of(path: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    for cut in range(len(path), -1, -1):
        if path[:cut] in lines:
            return lines[path[:cut]]
    return None


def _describe(exc: ValidationError, lines: dict[KeyPath, int], source: str) -> list[str]:
    problems = []
    for error in exc.errors(include_url=False):
        path = _key_path(error["loc"], lines)
        path = _refine(path, str(error["msg"]), lines)
        line = _line_of(path, lines)
        where = f"{source}:{line}" if line is not None else source
        message = _unknown_key(path, lines) if error["type"] == "extra_forbidden" else _message(error)
        problems.append(f"{where}: {_dotted(path)}: {message}")
    return problems


UNKNOWN_KEY = "unknown key; remove it or check its spelling (see examples/)"


def _unknown_key(path: KeyPath, lines: dict[KeyPath, int]) -> str:
    """"unknown key; did you mean admin_cidr?" when a key the model takes at that place is close
    to it and not already in the file beside it; the plain refusal otherwise."""
    import difflib

    if not path or not isinstance(path[-1], str):
        return UNKNOWN_KEY
    present = {p[-1] for p in lines if len(p) == len(path) and p[:-1] == path[:-1]}
    allowed = [name for name in _fields_at(ClusterSpec, path[:-1]) if name not in present]
    close = difflib.get_close_matches(path[-1], allowed, n=1, cutoff=0.6)
    return f"unknown key; did you mean {close[0]}?" if close else UNKNOWN_KEY


def _fields_at(model: type[BaseModel], path: KeyPath) -> list[str]:
    """The keys the spec takes at `path` (a mapping inside ClusterSpec); empty if not a model there."""
    annotation: Any = model
    for part in path:
        annotation = _model_in(annotation, item=isinstance(part, int))
        if annotation is None:
            return []
        if isinstance(part, int):
            continue
        field = annotation.model_fields.get(part)
        if field is None:
            return []
        annotation = field.annotation
    found = _model_in(annotation, item=False)
    return list(found.model_fields) if found is not None else []


def _model_in(annotation: Any, *, item: bool) -> Any:
    """The pydantic model `annotation` holds: itself, or inside `X | None` and Annotated; with
    `item`, the model of a list's items."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_in(typing.get_args(annotation)[0], item=item)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_in(arg, item=item)
            if found is not None:
                return found
        return None
    if item:
        if origin in (list, tuple):
            args = typing.get_args(annotation)
            return _model_in(args[0], item=False) if args else None
        return None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _refine(path: KeyPath, msg: str, lines: dict[KeyPath, int]) -> KeyPath:
    """A cross-field check on a mapping reports the mapping; when its message starts with the
    name of a key in that mapping ("admin_cidr 0.0.0.0/0 opens ..."), point at that key instead."""
    words = msg.removeprefix("Value error, ").split(" ", 1)
    if words and (*path, words[0]) in lines:
        return (*path, words[0])
    return path


def _key_path(loc: tuple[str | int, ...], lines: dict[KeyPath, int]) -> KeyPath:
    """Pydantic's error location without its union/function tags ("function-after[...]", "str",
    "[key]"). A part that is a key of the file is kept even when it looks like a tag: a hostile
    tag key such as `{{ x[1] }}` must still be pointed at."""
    path: KeyPath = ()
    for part in loc:
        if isinstance(part, int) or (*path, part) in lines or not _is_tag(part):
            path = (*path, part)
    return path


def _is_tag(part: str) -> bool:
    return "[" in part or part in {"str", "int", "bool", "float", "function-after", "function-before"}


def _message(error: Any) -> str:
    kind = error["type"]
    msg = str(error["msg"])
    if kind == "extra_forbidden":
        return UNKNOWN_KEY
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        return f"{msg[0].lower()}{msg[1:]}"
    if kind == "string_pattern_mismatch" and "pattern" in error.get("ctx", {}):
        return _pattern_message(error)
    if kind == "int_type":
        return f"must be a whole number written without quotes, such as 2 (got {_short(error.get('input'))})"
    if kind == "bool_type":
        return f"must be true or false, written without quotes (got {_short(error.get('input'))})"
    if kind in ("float_type", "finite_number"):
        return f"must be a finite number written without quotes, such as 2.5 (got {_short(error.get('input'))})"
    if msg.startswith("Value error, "):
        return msg[len("Value error, ") :]
    return f"{msg[0].lower()}{msg[1:]} (got {_short(error.get('input'))})"


def _pattern_message(error: Any) -> str:
    loc = [p for p in error["loc"] if isinstance(p, str)]
    field = loc[-1] if loc else ""
    got = _short(error.get("input"))
    if field == "name" and len(loc) == 1:
        return f"{got} is not a valid cluster name: use 1-32 lower-case letters, digits and '-', starting with a letter"
    if field == "name":
        return f"{got} is not a valid pool name: use 1-16 lower-case letters, digits and '-', starting with a letter"
    if "nccl_overrides" in loc:
        return f"{got} is not an NCCL variable; keys look like NCCL_IB_HCA"
    return f"{got} does not match the expected form {error['ctx']['pattern']}"


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"a number of {value.bit_length()} bits"  # repr() refuses ints past 4,300 digits
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
