"""A simplified field manager: ``metadata.managedFields`` and server-side apply.

What is kept from the real thing: each manager owns the fields it set (one entry per manager and
operation, in FieldsV1 form); an update takes ownership of the fields it changes from everyone
else; an apply sets the fields in its configuration, removes the fields it applied before and
no longer applies (unless someone else also owns them), and conflicts (409) with another
manager's different value unless ``force=true``.

What is simplified: ownership stops at the first list, i.e. every list is atomic (true for the
NRT schema, which declares no list-map keys; for built-in kinds with keyed lists, such as pod
containers, a list is owned as a whole), and ``metadata`` fields other than labels, annotations,
ownerReferences and finalizers are not tracked.
"""

from __future__ import annotations

import copy
from typing import Any

from .storage import Obj

Path = tuple[str, ...]

_TRACKED_META = ("labels", "annotations", "ownerReferences", "finalizers")


def leaves(obj: Obj) -> dict[Path, Any]:
    """Every owned field of ``obj`` and its value: maps are walked, anything else is a leaf."""
    out: dict[Path, Any] = {}

    def walk(node: Any, path: Path) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, (*path, key))
        else:
            out[path] = node

    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            for meta_key in _TRACKED_META:
                if meta_key in value:
                    walk(value[meta_key], ("metadata", meta_key))
            continue
        walk(value, (key,))
    return out


def get_path(obj: Obj, path: Path) -> tuple[bool, Any]:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def set_path(obj: Obj, path: Path, value: Any) -> None:
    node = obj
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = copy.deepcopy(value)


def remove_path(obj: Obj, path: Path) -> None:
    node: Any = obj
    for part in path[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return tree


def from_fields_v1(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, child in tree.items():
        path = (*prefix, key[2:])
        if child:
            out |= from_fields_v1(child, path)
        else:
            out.add(path)
    return out


class ApplyConflict(Exception):
    def __init__(self, conflicts: list[tuple[str, Path]]) -> None:
        super().__init__(conflicts)
        self.conflicts = conflicts


class ManagedFields:
    """The managedFields of one object, as sets of paths per (manager, operation)."""

    def __init__(self, entries: list[dict[str, Any]] | None) -> None:
        self._entries: list[dict[str, Any]] = []
        self._owned: list[set[Path]] = []
        for entry in entries or []:
            self._entries.append({k: v for k, v in entry.items() if k != "fieldsV1"})
            self._owned.append(from_fields_v1(entry.get("fieldsV1", {})))

    def _index(self, manager: str, operation: str, api_version: str, now: str) -> int:
        for i, entry in enumerate(self._entries):
            if entry["manager"] == manager and entry["operation"] == operation:
                return i
        self._entries.append(
            {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now}
        )
        self._owned.append(set())
        return len(self._entries) - 1

    def record_update(self, manager: str, api_version: str, old: Obj | None, new: Obj, now: str) -> None:
        """``manager`` changed ``old`` into ``new`` with a create, update or non-apply patch."""
        before, after = leaves(old) if old else {}, leaves(new)
        changed = {
            p for p in before.keys() | after.keys() if before.get(p, _MISSING) != after.get(p, _MISSING)
        }
        if not changed:
            return
        mine = self._index(manager, "Update", api_version, now)
        for i, owned in enumerate(self._owned):
            owned -= changed if i != mine else changed - after.keys()
        self._owned[mine] |= changed & after.keys()
        self._entries[mine].update(apiVersion=api_version, time=now)
        self._drop_empty()

    def apply(self, manager: str, api_version: str, current: Obj, config: Obj, force: bool, now: str) -> Obj:
        """The object after ``manager`` applies ``config`` to ``current``; ownership updated."""
        wanted = leaves(config)
        have = leaves(current)
        mine = self._index(manager, "Apply", api_version, now)
        conflicts: list[tuple[str, Path]] = []
        for path, value in wanted.items():
            if path in have and have[path] != value:
                for i, owned in enumerate(self._owned):
                    if i != mine and path in owned:
                        conflicts.append((self._entries[i]["manager"], path))
        if conflicts and not force:
            raise ApplyConflict(conflicts)
        result = copy.deepcopy(current)
        others = set().union(*(o for i, o in enumerate(self._owned) if i != mine))
        for path in self._owned[mine] - wanted.keys() - others:
            remove_path(result, path)
        for path, value in wanted.items():
            set_path(result, path, value)
        for i, owned in enumerate(self._owned):
            if i != mine:
                owned -= {p for m, p in conflicts}
        if self._owned[mine] != set(wanted) or result != current:
            self._entries[mine].update(apiVersion=api_version, time=now)
        self._owned[mine] = set(wanted)
        self._drop_empty()
        return result

    def _drop_empty(self) -> None:
        keep = [i for i, owned in enumerate(self._owned) if owned]
        self._entries = [self._entries[i] for i in keep]
        self._owned = [self._owned[i] for i in keep]

    def entries(self) -> list[dict[str, Any]]:
        return [
            {**entry, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(owned)}
            for entry, owned in zip(self._entries, self._owned, strict=True)
        ]


_MISSING = object()
