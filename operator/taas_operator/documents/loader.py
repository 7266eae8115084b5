"""The one YAML loader for documents users give (files, stdin, the dashboard's submit form).

    read_text(path) -> (text, display name)        # a file or `-` (stdin), at most 3 MiB read
    load_documents(text, source) -> list[Any]      # every non-empty document; InputError

YAML as kubectl reads it (a SafeLoader: plain data, no Python objects; an unquoted date or time
stays a string, as JSON and Kubernetes have no date type; `!!binary` and `!!set`, which JSON
cannot hold, are refused), with bounds checked while the text is
parsed, before anything is expanded, so a hostile document fails in milliseconds:

    input size     at most 3 MiB (`limits.MAX_REQUEST_BYTES`, the apiserver's request limit)
    documents      at most 100 in one input (`---` separated)
    nesting        at most 100 lists/maps deep
    aliases        at most 100 alias uses (`*name`) per document
    nodes          at most 250,000 values, lists and maps in the whole input, an alias counting
                   as a copy of everything it names (what it becomes once loaded: a
                   "billion laughs" of nested aliases is refused at the first alias past it)

An alias naming the node it sits in (a cycle) is refused too. Each breach is an `InputError`
naming the limit, the value seen and the fix. The bounds are counted in the composer
(`_BoundedLoader.compose_node`), which sees every alias before the constructor shares or copies
anything; events come from libyaml when PyYAML has it (a few times faster), else from PyYAML's
own parser.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import Node
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from taas_operator.documents.errors import InputError
from taas_operator.documents.limits import MAX_REQUEST_BYTES


@dataclass(frozen=True)
class YamlLimits:
    """Bounds on one YAML input (see the module's docstring)."""

    input_bytes: int = MAX_REQUEST_BYTES
    documents: int = 100
    depth: int = 100
    aliases: int = 100
    nodes: int = 250_000


LIMITS = YamlLimits()


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size} bytes"


def _too_big(source: str, size: int | None, limits: YamlLimits) -> InputError:
    seen = f"{_mib(size)}, " if size is not None else ""
    return InputError(
        f"{source}: the input is larger than {_mib(limits.input_bytes)} ({seen}the apiserver's "
        f"request limit); split it into smaller files"
    )


def read_text(path: str, limits: YamlLimits = LIMITS) -> tuple[str, str]:
    """(text, display name) of a file, or of stdin for `-`; never reads more than the size
    limit (plus one byte, to know it was passed), so /dev/zero or an endless pipe is refused."""
    if path == "-":
        data, source = sys.stdin.buffer.read(limits.input_bytes + 1), "<stdin>"
    else:
        file = Path(path)
        if not file.exists():
            raise InputError(f'the path "{path}" does not exist')
        if file.is_dir():
            raise InputError(f'the path "{path}" is a directory; give a YAML file')
        try:
            with file.open("rb") as stream:
                data = stream.read(limits.input_bytes + 1)
        except OSError as exc:
            raise InputError(f'cannot read "{path}": {exc}') from None
        source = path
    if len(data) > limits.input_bytes:
        size = Path(path).stat().st_size if path != "-" and Path(path).is_file() else None
        raise _too_big(source, size, limits)
    try:
        return data.decode("utf-8"), source
    except UnicodeDecodeError as exc:
        raise InputError(f'cannot read "{source}": not UTF-8 text ({exc})') from None


def _too_deep(limits: YamlLimits) -> str:
    return (
        f"the YAML nests lists and maps more than {limits.depth} deep: flatten it (a TFJob "
        f"needs far fewer levels)"
    )


class _Breach(yaml.YAMLError):
    """A bound passed while composing; becomes an InputError with the source's name."""

    def __init__(self, message: str, node_line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = node_line


class _BoundedComposer(Composer):
    """PyYAML's composer, counting documents, depth, aliases and expanded nodes as it goes."""

    limits: YamlLimits = LIMITS

    if TYPE_CHECKING:  # the parser's, mixed in beside this class

        def check_event(self, *choices: type) -> bool: ...
        def peek_event(self) -> Any: ...

    def _start_counting(self) -> None:
        self._documents = 0
        self._nodes = 0  # expanded nodes of the whole input
        self._depth = 0
        self._aliases = 0  # alias uses in this document
        self._sizes: dict[str, int] = {}  # anchor -> expanded nodes, once composed

    def compose_document(self) -> Any:
        self._documents += 1
        if self._documents > self.limits.documents:
            raise _Breach(
                f"the YAML has more than {self.limits.documents} documents ('---' separated): "
                f"split the file",
                self._line(),
            )
        self._aliases, self._sizes = 0, {}
        return super().compose_document()

    def _line(self) -> int | None:
        event = self.peek_event()
        mark = getattr(event, "start_mark", None)
        return mark.line + 1 if mark is not None else None

    def _count(self, nodes: int, line: int | None) -> None:
        self._nodes += nodes
        if self._nodes > self.limits.nodes:
            raise _Breach(
                f"the YAML expands to more than {self.limits.nodes:,} values, lists and maps "
                f"(each alias *name counts as a copy of what it names; {self._nodes:,} so far): "
                f"expand fewer aliases or split the file",
                line,
            )

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            line = self._line()
            anchor = self.peek_event().anchor
            self._aliases += 1
            if self._aliases > self.limits.aliases:
                raise _Breach(
                    f"the YAML uses more than {self.limits.aliases} aliases (*name) in one "
                    f"document: expand them or split the file",
                    line,
                )
            if anchor in self.anchors and anchor not in self._sizes:
                raise _Breach(
                    f"the alias *{anchor} refers to the node &{anchor} it sits in (a cycle, "
                    f"which JSON and Kubernetes cannot hold): write the value out",
                    line,
                )
            node = super().compose_node(parent, index)  # the anchored node, or undefined alias
            self._count(self._sizes[anchor], line)
            return node
        event = self.peek_event()
        anchor = event.anchor
        nested = isinstance(event, SequenceStartEvent | MappingStartEvent)
        if nested:
            self._depth += 1
            if self._depth > self.limits.depth:
                raise _Breach(_too_deep(self.limits), self._line())
        self._count(1, self._line())
        before = self._nodes
        try:
            node = super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1
        if anchor is not None:
            self._sizes[anchor] = self._nodes - before + 1
        return node


class _KubectlResolver(Resolver):
    """Implicit types as kubectl reads YAML: an unquoted date or time stays a string (JSON and
    Kubernetes have no date type), e.g. an annotation `built: 2024-01-01`."""


_KubectlResolver.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class _JsonConstructor(SafeConstructor):
    """SafeConstructor without the YAML types JSON lacks: `!!binary` (bytes) and `!!set` are
    refused with the line and the fix, never passed on as Python objects."""

    def _not_json(self, node: Node) -> Any:
        tag = node.tag.rsplit(":", 1)[-1]
        raise _Breach(
            f"the YAML has a !!{tag} value, a type JSON and Kubernetes do not have; fix: write "
            f"it as a plain value (for binary data, its base64 text as a quoted string)",
            node.start_mark.line + 1,
        )


_JsonConstructor.yaml_constructors = {
    **SafeConstructor.yaml_constructors,
    **{f"tag:yaml.org,2002:{tag}": _JsonConstructor._not_json for tag in ("binary", "set")},
}


class _PyLoader(Reader, Scanner, Parser, _BoundedComposer, _JsonConstructor, _KubectlResolver):
    """Events from PyYAML's own parser. Its scanner looks ahead through every open flow
    collection (`[[[[...`) before it yields an event, in time quadratic in their number, so
    the depth bound is also checked there."""

    line: int
    flow_level: int

    def fetch_flow_collection_start(self, token_class: type) -> None:
        if self.flow_level >= self.limits.depth:
            raise _Breach(_too_deep(self.limits), self.line + 1)
        super().fetch_flow_collection_start(token_class)

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _JsonConstructor.__init__(self)
        _KubectlResolver.__init__(self)
        self._start_counting()


_Loader: type = _PyLoader
try:  # libyaml's parser for the events; composing (and counting) stays in Python
    from yaml._yaml import CParser

    class _CLoader(_BoundedComposer, _JsonConstructor, _KubectlResolver, CParser):
        """Events from libyaml."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _JsonConstructor.__init__(self)
            _KubectlResolver.__init__(self)
            self._start_counting()

    _Loader = _CLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    pass


#: libyaml refuses what PyYAML's own scanner reads, and kubectl too: a JSON surrogate-pair
#: escape ("\\ud800\\udc00", which json.dumps writes for any character past U+FFFF).
_LIBYAML_ONLY = "found invalid Unicode character escape code"


def load_documents(text: str, source: str, limits: YamlLimits = LIMITS) -> list[Any]:
    """Every non-empty YAML document of `text`; InputError on bad YAML or a breached bound."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.input_bytes:
        raise _too_big(source, size, limits)
    try:
        return _load(_Loader, text, source, limits)
    except yaml.YAMLError as exc:
        if _Loader is _PyLoader or _LIBYAML_ONLY not in str(getattr(exc, "problem", "")):
            raise _invalid(exc, source, limits) from None
    try:  # the same bounds, with PyYAML's own scanner
        return _load(_PyLoader, text, source, limits)
    except yaml.YAMLError as exc:
        raise _invalid(exc, source, limits) from None


def _invalid(exc: yaml.YAMLError, source: str, limits: YamlLimits) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    if "maximum nesting depth" in str(getattr(exc, "problem", "")):  # libyaml's own, 1000
        where = f" (line {mark.line + 1})" if mark else ""
        return InputError(f"{source}{where}: {_too_deep(limits)}")
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return InputError(
        f"{source}: invalid YAML{where}: {problem}; fix the YAML syntax (indentation, "
        f"quotes, ':' after keys)"
    )


def _load(kind: type, text: str, source: str, limits: YamlLimits) -> list[Any]:
    """The documents as `kind` (libyaml's events or PyYAML's) reads them; YAMLError raised."""
    loader = kind(text)
    loader.limits = limits
    docs: list[Any] = []
    try:
        while loader.check_data():
            docs.append(loader.get_data())
    except _Breach as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise InputError(f"{source}{where}: {exc.message}") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"{source}: a value cannot be read: {exc}") from None
    finally:
        loader.dispose()
    return [d for d in docs if d is not None]
