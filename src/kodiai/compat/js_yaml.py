"""Load one YAML document the way js-yaml 4 `load()` does, safely.

ruamel.yaml (pure-Python, safe) does the scanning and parsing; this module builds the values from its
event stream with js-yaml's typing rules (`js_scalars`): js-yaml's default schema, duplicate keys are
errors, `<<` merge keys, mapping keys turned into strings, unknown tags are errors, exactly one document.

Built from events rather than ruamel's composer so that nothing recurses on the input: deep nesting,
alias expansion bombs ("billion laughs") and huge inputs end in `YamlSyntaxError`, never a hang or a
`RecursionError`. Aliases share the anchored value (as js-yaml does); their expanded size is counted.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from kodiai.compat.yaml_scalars import (
    YamlTimestamp,
    construct_js_float,
    construct_js_int,
    is_js_int,
    js_string,
    resolve_plain_scalar,
)
from kodiai.compat.yaml_scanner import TabTolerantScanner

#: Limits against hostile input. A real `.kodiai.yml` is a few hundred nodes, nested 6 deep at most.
MAX_DOCUMENT_CHARS = 262_144  # 256 KiB: ~100x a large real config; pure-Python parsing stays ~1-3 s
MAX_DEPTH = 256
MAX_EXPANDED_NODES = 1_000_000

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_TAG}{n}" for n in ("str", "null", "bool", "int", "float", "timestamp", "binary", "merge")}
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n\r")


class YamlSyntaxError(ValueError):
    """The text is not one valid YAML document (js-yaml would throw)."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        self.reason = reason
        self.line = line
        self.column = column
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"{reason}{where}")


def _mark(event: Event) -> tuple[int | None, int | None]:
    mark = getattr(event, "start_mark", None)
    if mark is None:
        return None, None
    return mark.line + 1, mark.column + 1


def _fail(reason: str, event: Event) -> YamlSyntaxError:
    line, col = _mark(event)
    return YamlSyntaxError(reason, line, col)


@dataclass
class _Node:
    """A value under construction (collections) or a finished value on its way to its parent."""

    value: Any
    size: int = 1
    anchor: str | None = None
    is_merge: bool = False
    tag: str | None = None
    # mapping state
    key: Any = None
    key_is_merge: bool = False
    has_key: bool = False
    merged: set[str] = field(default_factory=set)
    start: Event | None = None
    key_event: Event | None = None


def _decode_binary(text: str, event: Event) -> bytes:
    if any(ch not in _B64 for ch in text):
        raise _fail("cannot resolve a node with !<tag:yaml.org,2002:binary> explicit tag", event)
    clean = text.replace("\n", "").replace("\r", "").rstrip("=")
    if len(clean) % 4 == 1 or "=" in clean:
        raise _fail("cannot resolve a node with !<tag:yaml.org,2002:binary> explicit tag", event)
    try:
        return base64.b64decode(clean + "=" * (-len(clean) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _fail("cannot resolve a node with !<tag:yaml.org,2002:binary> explicit tag", event) from exc


def _tagged_scalar(tag: str, text: str, event: Event) -> Any:
    """A scalar with an explicit tag: the text must resolve as that type (js-yaml), else an error."""
    name = tag[len(_TAG) :]
    if name in ("str", "merge"):
        return text
    if name == "binary":
        return _decode_binary(text, event)
    resolved = resolve_plain_scalar(text)
    ok = {
        "null": resolved is None,
        "bool": isinstance(resolved, bool),
        "int": is_js_int(text),
        "float": isinstance(resolved, float)
        or (isinstance(resolved, int) and not isinstance(resolved, bool)),
        "timestamp": isinstance(resolved, YamlTimestamp),
    }[name]
    if not ok:
        raise _fail(f"cannot resolve a node with !<{tag}> explicit tag", event)
    if name == "int":
        return construct_js_int(text)
    if name == "float" and not isinstance(resolved, float):
        return construct_js_float(text)
    return resolved


def _scalar(event: ScalarEvent) -> tuple[Any, bool]:
    """(value, is_merge_key) of a scalar event."""
    tag = None if event.tag is None else str(event.tag)
    text: str = event.value
    if tag is None:
        if event.style is None:  # plain
            return resolve_plain_scalar(text), text == "<<"
        return text, False
    if tag == "!":
        return text, False
    if tag in _SCALAR_TAGS:
        return _tagged_scalar(tag, text, event), tag == f"{_TAG}merge"
    raise _fail(f"unknown tag !<{tag}>", event)


def _merge_into(target: _Node, source: Any, event: Event) -> None:
    """js-yaml `mergeMappings`: copy the keys the mapping does not have yet (they stay overridable)."""
    if isinstance(source, dict):
        items = list(source.items())
    elif isinstance(source, (list, bytes)):
        items = [(str(i), v) for i, v in enumerate(source)]
    elif isinstance(source, YamlTimestamp):
        items = []
    else:
        raise _fail("cannot merge mappings; the provided source object is unacceptable", event)
    for key, value in items:
        if key not in target.value:
            target.value[key] = value
            target.merged.add(key)


def _key_string(key: Any, event: Event) -> str:
    if isinstance(key, list) and any(isinstance(k, list) for k in key):
        raise _fail("nested arrays are not supported inside keys", event)
    return js_string(key)


class _Builder:
    """Turns the event stream of one document into plain Python values."""

    def __init__(self) -> None:
        self.stack: list[_Node] = []
        self.anchors: dict[str, _Node] = {}
        self.pending: set[str] = set()
        self.root: _Node | None = None

    def _open(self, node: _Node, event: Event) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise _fail(f"document nested more than {MAX_DEPTH} levels deep", event)
        if node.anchor is not None:
            self.pending.add(node.anchor)
        self.stack.append(node)

    def _finish(self, node: _Node, event: Event) -> None:
        if node.anchor is not None:
            self.pending.discard(node.anchor)
            self.anchors[node.anchor] = node
        if not self.stack:
            self.root = node
            return
        parent = self.stack[-1]
        parent.size += node.size
        if parent.size > MAX_EXPANDED_NODES:
            raise _fail(f"document expands to more than {MAX_EXPANDED_NODES} nodes (alias bomb?)", event)
        if isinstance(parent.value, list):
            parent.value.append(node.value)
            return
        if not parent.has_key:
            parent.key, parent.key_is_merge, parent.has_key = node.value, node.is_merge, True
            parent.key_event = event
            return
        parent.has_key = False
        if parent.key_is_merge:
            if isinstance(node.value, list):
                for item in node.value:
                    _merge_into(parent, item, event)
            else:
                _merge_into(parent, node.value, event)
            return
        key = _key_string(parent.key, event)
        if key in parent.value and key not in parent.merged:
            raise _fail("duplicated mapping key", parent.key_event or event)
        parent.value[key] = node.value
        parent.merged.discard(key)

    def feed(self, event: Event) -> None:
        if isinstance(event, ScalarEvent):
            value, is_merge = _scalar(event)
            self._finish(_Node(value, anchor=event.anchor, is_merge=is_merge), event)
        elif isinstance(event, AliasEvent):
            name = str(event.anchor)
            if name in self.pending:
                raise _fail(f'recursive alias "{name}" is not supported', event)
            target = self.anchors.get(name)
            if target is None:
                raise _fail(f'unidentified alias "{name}"', event)
            self._finish(_Node(target.value, size=target.size), event)
        elif isinstance(event, SequenceStartEvent):
            tag = None if event.tag is None else str(event.tag)
            if tag not in (None, "!", f"{_TAG}seq", f"{_TAG}omap", f"{_TAG}pairs"):
                raise _fail(f"unknown tag !<{tag}>", event)
            self._open(_Node([], anchor=event.anchor, tag=tag, start=event), event)
        elif isinstance(event, MappingStartEvent):
            tag = None if event.tag is None else str(event.tag)
            if tag not in (None, "!", f"{_TAG}map", f"{_TAG}set"):
                raise _fail(f"unknown tag !<{tag}>", event)
            self._open(_Node({}, anchor=event.anchor, tag=tag, start=event), event)
        elif isinstance(event, (SequenceEndEvent, MappingEndEvent)):
            node = self.stack.pop()
            node.value = _typed_collection(node, event)
            self._finish(node, event)


def _typed_collection(node: _Node, event: Event) -> Any:
    """Apply `!!omap`, `!!pairs` and `!!set` (js-yaml's explicit collection types)."""
    if node.tag == f"{_TAG}set":
        if any(v is not None for v in node.value.values()):
            raise _fail("cannot resolve a node with !<tag:yaml.org,2002:set> explicit tag", event)
        return node.value
    if node.tag in (f"{_TAG}omap", f"{_TAG}pairs"):
        out: list[Any] = []
        seen: set[str] = set()
        for item in node.value:
            if not isinstance(item, dict) or len(item) != 1:
                raise _fail(f"cannot resolve a node with !<{node.tag}> explicit tag", event)
            ((key, value),) = item.items()
            if node.tag.endswith("omap"):
                if key in seen:
                    raise _fail(f"cannot resolve a node with !<{node.tag}> explicit tag", event)
                seen.add(key)
                out.append(item)
            else:
                out.append([key, value])
        return out
    return node.value


def _syntax_error(exc: BaseException) -> YamlSyntaxError:
    if isinstance(exc, MarkedYAMLError):
        parts = [p.strip() for p in (exc.context, exc.problem) if p]
        mark = exc.problem_mark or exc.context_mark
        reason = ": ".join(parts) or "invalid YAML"
        if mark is not None:
            return YamlSyntaxError(reason, mark.line + 1, mark.column + 1)
        return YamlSyntaxError(reason)
    text = str(exc).strip().splitlines()
    return YamlSyntaxError(text[0] if text else type(exc).__name__)


def _flow_depth_exceeded(text: str) -> bool:
    """Cheap upper bound of flow nesting: ruamel's scanner is slow on thousands of open brackets, so
    such input is refused before parsing (brackets inside quoted strings count too: conservative)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif ch in "]}" and depth:
            depth -= 1
    return False


def load_yaml(text: str) -> Any:
    """Parse `text` as exactly one YAML document (or none: `None`) with js-yaml's semantics.

    Raises `YamlSyntaxError` for anything js-yaml rejects and for input beyond the safety limits.
    """
    if len(text) > MAX_DOCUMENT_CHARS:
        raise YamlSyntaxError(f"document is larger than {MAX_DOCUMENT_CHARS} characters")
    if text.startswith("\ufeff"):
        text = text[1:]
    if _flow_depth_exceeded(text):
        raise YamlSyntaxError(f"document nested more than {MAX_DEPTH} levels deep")
    parser = YAML(typ="safe", pure=True)
    parser.Scanner = TabTolerantScanner
    builder: _Builder | None = None
    try:
        for event in parser.parse(io.StringIO(text)):
            if isinstance(event, DocumentStartEvent):
                if builder is not None:
                    raise _fail("expected a single document in the stream, but found more", event)
                builder = _Builder()
            elif builder is not None:
                builder.feed(event)
    except YamlSyntaxError:
        raise
    except Exception as exc:  # hostile input must never escape as anything but a syntax error
        raise _syntax_error(exc) from exc
    if builder is None or builder.root is None:
        return None
    return builder.root.value
