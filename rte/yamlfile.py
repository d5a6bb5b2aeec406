"""YAML (and JSON, which YAML reads too) from files, with errors on one line.

PyYAML's own messages span several lines (a context, a problem, a caret drawing); an rte error
must fit on one line and name the file, so every loader that reads user files goes through here.
:func:`read_objects` also flattens the shapes kubectl writes: one object, several documents, or
a ``...List`` with ``items``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rte.errors import InputError

if TYPE_CHECKING:
    import yaml


def yaml_problem(error: yaml.YAMLError) -> str:
    """``invalid YAML at line L, column C: <problem>`` (position only when PyYAML knows it)."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error)
    return f"invalid YAML{where}: {' '.join(str(problem).split())}"


def read_documents(path: Path) -> list[Any]:
    """Every non-empty document in ``path``; :class:`InputError` naming the file otherwise."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(str(path), f"cannot read: {detail}") from e
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        raise InputError(str(path), yaml_problem(e)) from e


def read_objects(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, object)`` for every object in ``path``, the items of ``...List`` objects included.

    ``where`` names the file, the document when there are several, and the list item, for errors
    (``nrts.yaml[document 1]: items[0]``). Objects are yielded as decoded, unchecked.
    """
    documents = read_documents(path)
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
