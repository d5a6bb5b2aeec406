"""The JSON merge patch that turns the stored NRT into the one we want, or ``{}`` when they agree.

Pure functions over decoded JSON; the publisher sends the result. What the agent owns:

* ``zones``, ``attributes`` and ``topologyPolicies``: whole lists. The CRD declares no list
  types, so every list is atomic for merge patch anyway: a changed list is sent entire, an
  unchanged one is not sent at all, and one we no longer publish is removed with ``null``.
* annotation and label keys we publish, plus keys we published earlier and dropped since
  (``managed_*``); keys other actors set are never touched.
* the ``v1 Node`` entry of ``ownerReferences`` (the list is atomic too, so it is rewritten with
  the other owners kept in their order and ours last).

The comparison is plain JSON equality. That is exact because the apiserver stores what it was
sent (it does not canonicalise quantities or reorder lists) and :func:`rte.model.nrt.to_nrt`
always emits the same bytes for the same state.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

OWNED_FIELDS = ("topologyPolicies", "attributes", "zones")


def is_node_owner(ref: Mapping[str, Any]) -> bool:
    return ref.get("kind") == "Node" and ref.get("apiVersion") == "v1"


def merged_owners(
    current: Sequence[Mapping[str, Any]], node_owner: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``current`` with any Node owner replaced by ``node_owner`` (others kept, in order)."""
    return [dict(r) for r in current if not is_node_owner(r)] + [dict(node_owner)]


def _map_patch(have: Mapping[str, Any], want: Mapping[str, Any], managed: Collection[str]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in want.items() if have.get(k) != v}
    out.update({k: None for k in sorted(managed) if k not in want and k in have})
    return out


def merge_patch(
    server: Mapping[str, Any],
    desired: Mapping[str, Any],
    *,
    managed_annotations: Collection[str] = (),
    managed_labels: Collection[str] = (),
) -> dict[str, Any]:
    """The merge patch from ``server`` (the stored object) to ``desired`` (from ``to_nrt``).

    ``desired``'s ownerReferences, if any, must hold exactly one Node owner: it replaces the
    stored one. Without one, the stored ownerReferences are left alone.
    """
    patch: dict[str, Any] = {}
    for key in OWNED_FIELDS:
        if desired.get(key) != server.get(key):
            patch[key] = desired.get(key)
    have_meta: Mapping[str, Any] = server.get("metadata") or {}
    want_meta: Mapping[str, Any] = desired.get("metadata") or {}
    meta: dict[str, Any] = {}
    for key, managed in (("annotations", managed_annotations), ("labels", managed_labels)):
        sub = _map_patch(have_meta.get(key) or {}, want_meta.get(key) or {}, managed)
        if sub:
            meta[key] = sub
    node_owners = [r for r in want_meta.get("ownerReferences") or () if is_node_owner(r)]
    if node_owners:
        have_refs = list(have_meta.get("ownerReferences") or ())
        want_refs = merged_owners(have_refs, node_owners[0])
        if want_refs != have_refs:
            meta["ownerReferences"] = want_refs
    if meta:
        patch["metadata"] = meta
    return patch
