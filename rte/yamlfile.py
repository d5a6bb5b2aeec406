"""YAML and JSON from files and bodies, with every failure one :class:`InputError` on one line.

PyYAML's own messages span several lines (a context, a problem, a caret drawing); an rte error
must fit on one line and name the file, so every loader that reads user files goes through here.
Both decoders also fail in ways that are not syntax errors, which are turned into InputErrors
here too: nesting deeper than Python's recursion limit (``RecursionError``; PyYAML reaches it
at a few hundred levels), and integers too long to convert (Python refuses more than 4300
decimal digits with a ``ValueError``; PyYAML's hexadecimal ``0x...`` has no such limit, so the
value would fail later, wherever it is printed).
:func:`read_objects` also flattens the shapes kubectl writes: one object, several documents, or
a ``...List`` with ``items``.

JSON goes through orjson (several times faster than ``json`` both ways, which matters for the
extender's multi-megabyte requests in whole-Node mode), with ``json`` behind it wherever the two
would disagree: anything orjson refuses (lone surrogates, ``NaN``, a byte order mark, nesting
past its 1024 levels) is decoded again by ``json``, which accepts it or words the error as
before; integers beyond 64 bits, which orjson would read as floats, are spotted by a byte scan
first (:func:`_may_hold_big_int`); and what orjson cannot encode (such integers, non-string
keys) is encoded by ``json``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rte.errors import InputError

if TYPE_CHECKING:
    import yaml

MAX_INTEGER_DIGITS = 100
"""A YAML integer with more decimal digits than this is refused: no count, size or id rte reads
comes near it, and the value can still be shown in a message."""

_TOO_DEEP = "nested too deeply"


def _number_scan_table() -> bytes:
    # Digits and "-" -> "0"; "[" and "," (a value in an array follows one) -> ","; ":" and '"'
    # stay (a value after a key follows '":' once whitespace is gone); anything else -> "x".
    table = bytearray(b"x" * 256)
    for c in b"0123456789-":
        table[c] = ord("0")
    for c in b"[,":
        table[c] = ord(",")
    table[ord(":")], table[ord('"')] = ord(":"), ord('"')
    return bytes(table)


_NUMBER_SCAN = _number_scan_table()
_RUN = b"0" * 20
"""A number orjson would turn into a float: 20 digits or more (above 2**64 - 1 > 10**19), or
"-" and 19 digits (below -2**63); both become a run of 20 "0" after the scan."""


def _may_hold_big_int(data: bytes) -> bool:
    """Whether ``data`` may hold an integer outside orjson's 64 bits (a few ms for 3 MB).

    Digits inside a string only count after '":' or ',' (a string like ``"a,123..."``): those
    rare false alarms cost the slower decoder, never a wrong value.
    """
    scanned = data.translate(_NUMBER_SCAN, b" \t\r\n")  # JSON's whitespace, deleted
    return scanned.startswith(_RUN) or b'":' + _RUN in scanned or b"," + _RUN in scanned


def encode_json(obj: Any) -> bytes:
    """Compact JSON as UTF-8: orjson's, or ``json``'s for what orjson refuses (see the module)."""
    import orjson

    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, separators=(",", ":")).encode()  # ASCII: lone surrogates escaped


def yaml_problem(error: yaml.YAMLError) -> str:
    """``invalid YAML at line L, column C: <problem>`` (position only when PyYAML knows it)."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error)
    return f"invalid YAML{where}: {' '.join(str(problem).split())}"


def decode_json(text: str | bytes, source: str) -> Any:
    """``json.loads(text)``, at orjson's speed; an :class:`InputError` naming ``source`` for
    anything it refuses."""
    import orjson  # here, not at the top: the agent reads no JSON this way and need not load it

    try:
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        if not _may_hold_big_int(data):
            return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass  # json decides: it accepts a few things orjson does not, and words its errors
    try:
        return json.loads(text)
    except RecursionError as e:
        raise InputError(source, f"not valid JSON: {_TOO_DEEP}") from e
    except ValueError as e:  # syntax, a bad encoding, or an integer too long to convert
        raise InputError(source, f"not valid JSON: {e}") from e


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """``yaml.SafeLoader`` whose integers are at most :data:`MAX_INTEGER_DIGITS` digits long."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
            text = str(node.value).replace("_", "")
            digits = len(text.lstrip("+-"))
            if digits > MAX_INTEGER_DIGITS:
                raise yaml.constructor.ConstructorError(
                    None, None, f"integer of {digits} digits is too long", node.start_mark
                )
            value: int = super().construct_yaml_int(node)
            if len(str(abs(value))) > MAX_INTEGER_DIGITS:  # 0x and 0b spell them shorter
                raise yaml.constructor.ConstructorError(None, None, "integer is too long", node.start_mark)
            return value

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


def load_yaml(text: str, source: str) -> Any:
    """The one YAML document in ``text`` (``None`` when empty); InputError naming ``source``."""
    documents = _load(text, source, single=True)
    return documents[0] if documents else None


def load_yaml_documents(text: str, source: str) -> list[Any]:
    """Every non-empty document in ``text``; :class:`InputError` naming ``source`` otherwise."""
    return [d for d in _load(text, source, single=False) if d is not None]


def _load(text: str, source: str, *, single: bool) -> list[Any]:
    import yaml

    try:
        # _loader() is a SafeLoader: no tag builds anything but plain data.
        if single:
            return [yaml.load(text, Loader=_loader())]
        return list(yaml.load_all(text, Loader=_loader()))
    except yaml.YAMLError as e:
        raise InputError(source, yaml_problem(e)) from e
    except RecursionError as e:
        raise InputError(source, f"invalid YAML: {_TOO_DEEP}") from e
    except ValueError as e:  # a constructor's: a date like 2001-13-45
        raise InputError(source, f"invalid YAML: {e}") from e


def read_documents(path: Path) -> list[Any]:
    """Every non-empty document in ``path``; :class:`InputError` naming the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(str(path), f"cannot read: {detail}") from e
    return load_yaml_documents(text, str(path))


def _json_or_yaml_documents(path: Path) -> list[Any]:
    """:func:`read_documents`, through the JSON decoder when the file is JSON.

    A ``.json`` file, or one whose first character opens a JSON object or array, is JSON (what
    ``kubectl get -o json`` writes): PyYAML took 218 s and 2.5 GB for 30 MB of NRTs that orjson
    reads in well under a second. A file that does not parse as JSON (YAML's flow style looks like
    JSON) goes to the YAML decoder, as every file did before.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from e
    if path.suffix.lower() == ".json" or data.lstrip()[:1] in (b"{", b"["):
        try:
            document = decode_json(data, str(path))
        except InputError:
            pass  # YAML decides, and words the error as it always did
        else:
            return [] if document is None else [document]
    return read_documents(path)


def read_objects(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, object)`` for every object in ``path``, the items of ``...List`` objects included.

    ``where`` names the file, the document when there are several, and the list item, for errors
    (``nrts.yaml[document 1]: items[0]``). Objects are yielded as decoded, unchecked.
    """
    documents = _json_or_yaml_documents(path)
    for index, doc in enumerate(documents):
        where = str(path) if len(documents) == 1 else f"{path}[document {index}]"
        if isinstance(doc, Mapping) and str(doc.get("kind", "")).endswith("List"):
            items = doc.get("items")
            if not isinstance(items, list):
                raise InputError(f"{where}: items", "expected a list")
            for item_index, item in enumerate(items):
                yield f"{where}: items[{item_index}]", item
        else:
            yield where, doc
