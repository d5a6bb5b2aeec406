"""A list page from the apiserver decoded one item at a time (the standard library's own decoder).

A page of 500 pods decoded whole is some 1.5 MiB of small dicts and strings, held until the last
item is read. Freed, they leave CPython's memory pools part-filled around whatever was kept
meanwhile, and the process keeps those pages as resident memory (docs/performance.md, "Agent
memory": the agent's per-pod cost). :func:`list_page_one_by_one` hands the items out as it
decodes them, so only one item's objects exist at a time next to what the reader keeps.

The page is the apiserver's ``List`` object: ``{"kind": ..., "apiVersion": ..., "metadata":
{...}, "items": [...]}``, keys in any order. The returned metadata is filled in as the page is
read, so it is complete once the items have been consumed (the reflector reads it after them).
Malformed JSON raises :class:`json.JSONDecodeError`, as ``json.loads`` of the page would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

_DECODE = json.JSONDecoder().raw_decode
_SPACE = re.compile(r"[ \t\n\r]*")


def list_page_one_by_one(data: bytes) -> tuple[Mapping[str, Any], Iterator[Mapping[str, Any]]]:
    """The page's metadata (complete once the items are consumed) and its object items."""
    metadata: dict[str, Any] = {}
    return metadata, _items(data.decode("utf-8"), metadata)


def _skip(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _expect(text: str, pos: int, char: str) -> int:
    pos = _skip(text, pos)
    if text[pos : pos + 1] != char:
        raise json.JSONDecodeError(f"Expecting {char!r}", text, pos)
    return pos + 1


def _items(text: str, metadata: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
    pos = _skip(text, _expect(text, 0, "{"))
    if text[pos : pos + 1] == "}":
        return
    while True:
        key, pos = _DECODE(text, _skip(text, pos))
        pos = _skip(text, _expect(text, pos, ":"))
        if key == "items" and text[pos : pos + 1] == "[":
            pos = _skip(text, pos + 1)
            if text[pos : pos + 1] == "]":
                pos += 1
            else:
                while True:
                    item, pos = _DECODE(text, pos)
                    if isinstance(item, Mapping):
                        yield item
                    pos = _skip(text, pos)
                    if text[pos : pos + 1] == "]":
                        pos += 1
                        break
                    pos = _skip(text, _expect(text, pos, ","))
        else:
            value, pos = _DECODE(text, pos)
            if key == "metadata" and isinstance(value, Mapping):
                metadata.update(value)
        pos = _skip(text, pos)
        if text[pos : pos + 1] == "}":
            if _skip(text, pos + 1) != len(text):
                raise json.JSONDecodeError("Extra data", text, pos + 1)
            return
        pos = _expect(text, pos, ",")
