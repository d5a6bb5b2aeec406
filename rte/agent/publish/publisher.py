"""Publish this node's NodeResourceTopology with as few apiserver writes as possible.

**Write mechanism: JSON merge patch against the last object the server returned, with a
``resourceVersion`` precondition.** Chosen over a PUT (update) because:

* the patch carries only what changed: on pod churn usually just the fingerprint attribute
  and annotation, not every zone; lists are atomic, so a changed list is sent whole;
* fields other actors own (their labels, annotations, owners) are never sent back, so nothing
  of theirs can be clobbered, while the ``resourceVersion`` in the patch makes the apiserver
  refuse it (409) if anyone wrote since our read; we then re-read and recompute;
* server-side apply would also work, but it decides "no change" only on the server, after the
  request; we decide before, and send nothing.

**A write happens only when content differs.** The last object the server returned is
cached; each :meth:`Publisher.publish` builds the desired object (``to_nrt``, canonical) and
diffs it against that cache (:mod:`rte.agent.publish.nrtpatch`). Equal means no request at all, not
even a GET. The cache is dropped (and the next publish re-reads) after any failure, on a 404
and on :meth:`Publisher.forget`, which the daemon calls on a slow resync timer so that an NRT
deleted or edited behind our back is noticed even when our content never changes, and when its
watch of the object (:mod:`rte.agent.watch.nrtwatch`) sees a change that :meth:`Publisher.differs`
says is not ours.

**Lifecycle handled here:** create when GET says 404 (with a ``v1 Node`` ownerReference, its
uid from a GET of our own Node, cached, refetched whenever the NRT has to be recreated, so a
re-registered Node's new uid is picked up); recreate when a patch finds the object gone; retry
with backoff and jitter on 409, 429 (``Retry-After``), 5xx and transport errors. It never
lists or watches anything cluster-wide.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from enum import StrEnum
from typing import Any
from urllib.parse import quote

from rte.agent.publish.nrtpatch import merge_patch
from rte.agent.publish.retry import ApiRetryBackoff, Failure, classify, describe, is_api_error
from rte.errors import PublishError, UnavailableError
from rte.model.nrt import GROUP, PLURAL, VERSION, to_nrt
from rte.model.topology import NodeTopology, OwnerReference
from rte.runtime.kubeclient import raw_get, raw_json_request

log = logging.getLogger(__name__)

CRD_NAME = f"{PLURAL}.{GROUP}"
_NRTS_PATH = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
"""The NRTs, read, created and patched with plain requests: the generated ``CustomObjectsApi``
is 1.5 MiB of the agent's resident memory."""
CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
"""Read with a plain GET: the generated ``ApiextensionsV1Api`` and its CRD models are 1.9 MiB
of the agent's resident memory for this one read (docs/performance.md, "Agent memory")."""
MERGE_PATCH = "application/merge-patch+json"


class PublishOutcome(StrEnum):
    CREATED = "created"
    PATCHED = "patched"
    SKIPPED = "skipped"
    RECREATED = "recreated"


class _Gone(Exception):
    """The NRT vanished between our read and our patch: recreate it at once."""


def _json(response: Any) -> Any:
    """The decoded body of a ``_preload_content=False`` response (the typed models are slow and lossy)."""
    return json.loads(response.data)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("metadata"), dict):
        raise UnavailableError(f"the apiserver answered {what} with something that is not an object")
    return value


class Publisher:
    """Creates or patches NRT ``<node_name>``; see the module docstring for the rules."""

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        *,
        owner_reference: bool = True,
        field_manager: str = "rte-agent",
        retries: int = 5,
        backoff_base: float = 0.2,
        backoff_cap: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.node_name = node_name
        self.owner_reference = owner_reference
        self.field_manager = field_manager
        self.retries = max(0, retries)
        self._backoff = ApiRetryBackoff(backoff_base, backoff_cap, rng)
        self._sleep = sleep
        self._api = api_client
        self._path = f"{_NRTS_PATH}/{quote(node_name, safe='')}"  # as the generated client quotes it
        self._lock = threading.Lock()
        self._server: dict[str, Any] | None = None  # the last NRT the apiserver returned
        self._node_uid: str | None = None
        self._owner_forbidden = False
        self._published = False  # an NRT of ours existed at some point (so a missing one is RECREATED)
        # Annotation/label keys we have published: dropping one later deletes it from the object.
        self._managed_annotations: set[str] = set()
        self._managed_labels: set[str] = set()
        # What the last publish wanted stored, for the NRT watch to tell a foreign change from
        # our own write (rte.agent.watch.nrtwatch); its own lock, so the watch never waits for a write.
        self._wanted_lock = threading.Lock()
        self._wanted: tuple[dict[str, Any], frozenset[str], frozenset[str]] | None = None

    # -- public ----------------------------------------------------------------------------------

    def crd_ready(self) -> bool:
        """Whether the NRT CRD is installed and established (False on 404: wait and ask again)."""
        try:
            crd = _json(raw_get(self._api, CRD_PATH))
        except Exception as e:
            if not is_api_error(e):
                raise
            failure = classify(e)
            if failure is Failure.NOT_FOUND:
                return False
            if failure is Failure.PERMANENT:
                raise PublishError(f"reading CustomResourceDefinition {CRD_NAME}: {describe(e)}") from e
            raise UnavailableError(f"reading CustomResourceDefinition {CRD_NAME}: {describe(e)}") from e
        served = {v.get("name") for v in crd.get("spec", {}).get("versions", []) if v.get("served")}
        if VERSION not in served:
            raise PublishError(
                f"CustomResourceDefinition {CRD_NAME} does not serve {VERSION} (serves {sorted(served)})"
            )
        conditions = crd.get("status", {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    def forget(self) -> None:
        """Drop the cached server object and Node uid: the next publish reads both again.

        Also retries reading the Node after a 403 (RBAC may have been fixed since).
        """
        with self._lock:
            self._server = None
            self._node_uid = None
            self._owner_forbidden = False

    def differs(self, stored: Mapping[str, Any]) -> bool | None:
        """Whether ``stored`` (the object as the apiserver has it; ``{}``: none) differs from what
        the agent last set out to store, in the fields the agent owns; None before any publish.

        Set before each write is sent, so the watch event of our own write is never taken for
        someone else's (it may arrive before the write's answer does).
        """
        with self._wanted_lock:
            wanted = self._wanted
        if wanted is None:
            return None
        if not stored:
            return True
        desired, annotations, labels = wanted
        return bool(merge_patch(stored, desired, managed_annotations=annotations, managed_labels=labels))

    def publish(self, topology: NodeTopology) -> PublishOutcome:
        """Make the stored NRT equal ``topology``; see :class:`PublishOutcome` for what happened.

        Raises :class:`PublishError` when retrying cannot help (invalid object, forbidden) and
        :class:`UnavailableError` when the apiserver stayed unreachable, throttled or
        conflicting for every attempt, or the CRD is not installed.
        """
        if topology.name != self.node_name:
            raise PublishError(
                f"refusing to publish NRT {topology.name!r} from the agent of node {self.node_name!r}"
            )
        with self._lock:
            return self._publish(topology)

    # -- the retry loop --------------------------------------------------------------------------

    def _publish(self, topology: NodeTopology) -> PublishOutcome:
        # When a write's answer is lost (timeout, reset, 5xx), it may have landed: if the re-read
        # then shows our content, report what that write did rather than "skipped".
        unconfirmed: PublishOutcome | None = None
        last: BaseException | None = None
        for attempt in range(self.retries + 1):
            if attempt and last is not None and not isinstance(last, _Gone):
                delay = self._backoff.delay_for(last, attempt - 1)
                log.debug(
                    "NRT %s: retry %d in %.2fs after %s", self.node_name, attempt, delay, describe(last)
                )
                self._sleep(delay)
            pending: list[PublishOutcome] = []
            try:
                outcome = self._attempt(topology, pending)
            except _Gone as e:
                last = e
                continue
            except Exception as e:
                if not is_api_error(e):
                    raise
                last = e
                self._server = None  # whatever happened, read again before the next write
                if pending:
                    unconfirmed = pending[0]
                self._raise_if_final(e)
                continue
            if outcome is PublishOutcome.SKIPPED and unconfirmed is not None:
                return unconfirmed
            return outcome
        assert last is not None
        raise UnavailableError(
            f"publishing NRT {self.node_name}: gave up after {self.retries + 1} attempts: {describe(last)}"
        ) from last

    def _raise_if_final(self, exc: BaseException) -> None:
        failure = classify(exc)
        if failure is Failure.PERMANENT:
            raise PublishError(f"publishing NRT {self.node_name}: {describe(exc)}") from exc
        if failure is Failure.UNAUTHORIZED:
            raise UnavailableError(f"publishing NRT {self.node_name}: {describe(exc)}") from exc
        if failure is Failure.NOT_FOUND:
            # Only a create or the CRD endpoints answer 404 here: the resource is not served.
            raise UnavailableError(
                f"publishing NRT {self.node_name}: the apiserver does not serve {PLURAL}.{GROUP}/{VERSION}"
                f" (is the CRD installed?): {describe(exc)}"
            ) from exc

    # -- one attempt -----------------------------------------------------------------------------

    def _attempt(self, topology: NodeTopology, pending: list[PublishOutcome]) -> PublishOutcome:
        if self._server is None:
            self._server = self._read()
            if self._server is None:
                self._node_uid = None  # (re)creating: the Node may have been re-registered too
        desired = self._desired(topology)
        with self._wanted_lock:
            self._wanted = (desired, frozenset(self._managed_annotations), frozenset(self._managed_labels))
        if self._server is None:
            outcome = PublishOutcome.RECREATED if self._published else PublishOutcome.CREATED
            pending.append(outcome)
            self._server = self._create(desired)
            self._published = True
            log.info("NRT %s %s", self.node_name, outcome)
            return outcome
        self._published = True
        patch = merge_patch(
            self._server,
            desired,
            managed_annotations=self._managed_annotations,
            managed_labels=self._managed_labels,
        )
        if not patch:
            return PublishOutcome.SKIPPED
        patch.setdefault("metadata", {})["resourceVersion"] = self._server["metadata"]["resourceVersion"]
        pending.append(PublishOutcome.PATCHED)
        self._server = self._patch(patch)
        log.info("NRT %s patched (%s)", self.node_name, ", ".join(sorted(patch)))
        return PublishOutcome.PATCHED

    def _desired(self, topology: NodeTopology) -> dict[str, Any]:
        owners = topology.owner_references
        uid = self._owner_uid()
        if uid is not None:
            node = OwnerReference("v1", "Node", self.node_name, uid)
            owners = (*(o for o in owners if not (o.kind == "Node" and o.api_version == "v1")), node)
        desired = to_nrt(replace(topology, owner_references=owners))
        meta = desired["metadata"]
        self._managed_annotations.update(meta.get("annotations", {}))
        self._managed_labels.update(meta.get("labels", {}))
        return desired

    # -- requests --------------------------------------------------------------------------------

    def _read(self) -> dict[str, Any] | None:
        try:
            obj: Any = raw_json_request(self._api, "GET", self._path)
        except Exception as e:
            if is_api_error(e) and classify(e) is Failure.NOT_FOUND:
                return None
            raise
        return _object(obj, f"GET {PLURAL}/{self.node_name}")

    def _create(self, desired: dict[str, Any]) -> dict[str, Any]:
        obj = raw_json_request(
            self._api, "POST", _NRTS_PATH, query=[("fieldManager", self.field_manager)], body=desired
        )
        return _object(obj, f"POST {PLURAL}")

    def _patch(self, patch: dict[str, Any]) -> dict[str, Any]:
        try:
            obj = raw_json_request(
                self._api,
                "PATCH",
                self._path,
                query=[("fieldManager", self.field_manager)],
                body=patch,
                content_type=MERGE_PATCH,
            )
        except Exception as e:
            if is_api_error(e) and classify(e) is Failure.NOT_FOUND:
                log.warning("NRT %s was deleted behind our back; recreating it", self.node_name)
                self._server = None
                self._node_uid = None
                raise _Gone() from e
            raise
        return _object(obj, f"PATCH {PLURAL}/{self.node_name}")

    def _owner_uid(self) -> str | None:
        """Our Node's uid (GET of this one Node, cached); None when unknown or not wanted."""
        if not self.owner_reference or self._owner_forbidden:
            return None
        if self._node_uid is None:
            try:
                node = _json(raw_get(self._api, f"/api/v1/nodes/{self.node_name}"))
            except Exception as e:
                if not is_api_error(e):
                    raise
                failure = classify(e)
                if failure is Failure.NOT_FOUND:
                    log.warning("Node %s not found: publishing without an owner reference", self.node_name)
                    return None
                if failure is Failure.PERMANENT:
                    # Missing RBAC: degrade to no owner rather than never publishing.
                    log.warning("cannot read Node %s (%s): publishing without an owner reference",
                                self.node_name, describe(e))  # fmt: skip
                    self._owner_forbidden = True
                    return None
                raise
            self._node_uid = str(node["metadata"]["uid"])
        return self._node_uid
