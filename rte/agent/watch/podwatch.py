"""The pods bound to this node, kept current by a node-scoped list + watch.

The spec-based fingerprint rule needs pod specs (QoS, integral CPU requests), which the kubelet's
podresources API does not give. One :class:`~rte.runtime.reflector.Reflector` thread lists ``pods`` with
``fieldSelector=spec.nodeName=<node>`` and then watches from the list's resourceVersion:

* the list asks for ``resourceVersion=0`` so the apiserver answers from its watch cache (indexed
  by ``spec.nodeName``) instead of etcd; a thousand agents restarting together stay cheap;
* a watch that ends cleanly (server timeout) is resumed from the last resourceVersion seen
  (bookmarks keep it fresh), with no relist;
* ``410 Gone`` (history compacted) means "list again"; any other failure (cut connection,
  5xx, timeouts) is retried with backoff, resuming where possible, and never ends the thread.

Each pod is kept as what the fingerprint's spec rule reads of it, a
:class:`~rte.agent.compute.podspec.PodSpec` of a few dozen bytes, not the whole
:class:`~rte.model.pod.Pod` (some 600 bytes a pod at 5000 pods: docs/performance.md, "Agent
memory"). ``on_change`` is called (from the watch thread) whenever the set of pods or any pod's
record changes, including when a relist finds a different set; updates that leave the record
equal (status only, labels, a request the rule does not read) do not call it. ``on_rejected``
is called once per pod the kubelet refused at admission over alignment
(:mod:`rte.agent.watch.rejections`).
"""

from __future__ import annotations

import logging
import random
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from rte.agent.compute.podspec import PodSpec
from rte.agent.watch.rejections import Refusal, Rejection, RejectionTracker, refused
from rte.errors import InputError
from rte.model.pod import PodKey, pod_from_manifest
from rte.runtime.jsonpage import list_page_one_by_one
from rte.runtime.kubeclient import raw_list_call
from rte.runtime.reflector import Obj, Reflector

log = logging.getLogger(__name__)

PODS_PATH = "/api/v1/pods"


def node_identity_headers(node_name: str) -> dict[str, str]:
    """Impersonation headers that make a request the node's own (user ``system:node:<node>`` in
    group ``system:nodes``, the identity the Node authorizer recognises:
    kubernetes/kubernetes pkg/auth/nodeidentifier/default.go).

    With constrained impersonation (KEP-5284; beta and on by default in Kubernetes 1.36, alpha
    in 1.35) a pod-bound service account token may impersonate only the node its pod runs on,
    given ``impersonate:associated-node``; the Node authorizer with field selectors (KEP-4601,
    on by default since 1.32) then allows listing and watching pods only with
    ``fieldSelector=spec.nodeName=<that node>``. The agent's own token then needs no right to
    read pods at all (deploy/components/pods-as-node)."""
    return {"Impersonate-User": f"system:node:{node_name}", "Impersonate-Group": "system:nodes"}


def _node_pods_call(api_client: Any, node_name: str, *, as_node: bool = False) -> Callable[..., Any]:
    """A ``list_*``-shaped callable over a plain GET of the pods bound to ``node_name``, as the
    node itself when ``as_node``.

    A plain GET (not ``CoreV1Api``) keeps the generated core client out of the agent's memory.
    """
    return raw_list_call(
        api_client,
        PODS_PATH,
        [("fieldSelector", f"spec.nodeName={node_name}")],
        headers=node_identity_headers(node_name) if as_node else None,
    )


class NodePodWatch:
    """Pods with ``spec.nodeName == node_name``, from a background list + watch."""

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        *,
        on_change: Callable[[], None] | None = None,
        on_rejected: Callable[[Rejection], None] | None = None,
        watch_seconds: int = 300,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        connect_timeout: float = 10.0,
        rng: Callable[[], float] = random.random,
        as_node: bool = False,
    ) -> None:
        self.node_name = node_name
        self.on_change = on_change
        self.on_rejected = on_rejected
        self._rejections = RejectionTracker()
        self._lock = threading.Lock()
        self._pods: dict[PodKey, PodSpec] = {}
        self._reflector = Reflector(
            f"pods on {node_name}",
            _node_pods_call(api_client, node_name, as_node=as_node),
            on_list=self._on_list,
            on_event=self._on_event,
            # Each listed pod is read down to what is kept as its page arrives: the decoded JSON
            # of a whole list (some 3 KiB a pod) would otherwise be held until its end, and the
            # process keeps such a peak as resident memory (docs/performance.md, "Agent memory").
            read_item=self._read_listed,
            # ... and decoded one pod at a time (rte.runtime.jsonpage), not a page at a time.
            decode_page=list_page_one_by_one,
            watch_seconds=watch_seconds,
            connect_timeout=connect_timeout,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            rng=rng,
            # Served from the apiserver's watch cache (indexed by spec.nodeName): a thousand
            # agents restarting together stay cheap.
            list_resource_version="0",
        )

    # -- public ----------------------------------------------------------------------------------

    def start(self) -> None:
        self._reflector.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._reflector.stop(timeout)

    @property
    def running(self) -> bool:
        return self._reflector.running

    @property
    def relists(self) -> int:
        return self._reflector.lists

    @property
    def failures(self) -> int:
        return self._reflector.failures

    def synced(self) -> bool:
        """True once the first list succeeded (the snapshot is then never older than the watch)."""
        return self._reflector.synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._reflector.synced.wait(timeout)

    def pods(self) -> Mapping[PodKey, PodSpec]:
        """A snapshot: ``(namespace, name)`` -> :class:`PodSpec`.

        The watch never changes a mapping it handed out: each event makes a new one (a copy per
        event, not per cycle), so the loop's snapshot is the watch's own and a node's pods are
        held in one dict, not two (docs/performance.md, "Agent memory")."""
        with self._lock:
            return self._pods

    # -- reflector callbacks (the watch thread) --------------------------------------------------

    def _read_listed(self, obj: Obj) -> tuple[tuple[PodKey, PodSpec] | None, Refusal | None]:
        """A listed pod as :meth:`_on_list` needs it: the pod, and its refusal if it is ours."""
        return self._pod(obj), refused(obj) if self._ours(obj) else None

    def _on_list(self, items: list[tuple[tuple[PodKey, PodSpec] | None, Refusal | None]]) -> None:
        pods = dict(pod for pod, _ in items if pod is not None)
        with self._lock:
            changed = pods != self._pods
            self._pods = pods
        log.debug("pod watch on %s: listed %d pods", self.node_name, len(pods))
        for rejection in self._rejections.listed_refused(r for _, r in items if r is not None):
            self._rejected(rejection)
        if changed:
            self._notify()

    def _on_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        if self._ours(obj):
            rejection = self._rejections.event(kind, obj)
            if rejection is not None:
                self._rejected(rejection)
        read = self._pod(obj)
        if read is None:
            return
        key, pod = read
        with self._lock:
            if kind == "DELETED":
                changed = key in self._pods
                if changed:
                    self._pods = {k: v for k, v in self._pods.items() if k != key}
            else:
                changed = self._pods.get(key) != pod
                if changed:
                    self._pods = {**self._pods, key: pod}
        if changed:
            self._notify()

    def _pod(self, obj: Mapping[str, Any]) -> tuple[PodKey, PodSpec] | None:
        """The pod's key and record; None for a pod that does not count here."""
        try:
            pod = pod_from_manifest(obj, source="pod from the apiserver")
        except InputError as e:
            log.warning("pod watch on %s: ignoring a pod: %s", self.node_name, e)
            return None
        if pod.node_name and pod.node_name != self.node_name:
            return None  # the selector is ours to trust, but a stray pod must not count
        # The name interned: the kubelet's List names the same pods, and its reader interns
        # them too (rte.podres.convert), so the two views share one string per pod.
        return (pod.namespace, sys.intern(pod.name)), PodSpec.of(pod)

    def _ours(self, obj: Mapping[str, Any]) -> bool:
        spec = obj.get("spec")
        return isinstance(spec, Mapping) and spec.get("nodeName") == self.node_name

    def _rejected(self, rejection: Rejection) -> None:
        if self.on_rejected is None:
            return
        try:
            self.on_rejected(rejection)
        except Exception:
            log.exception("pod watch on %s: on_rejected callback failed", self.node_name)

    def _notify(self) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change()
        except Exception:
            log.exception("pod watch on %s: on_change callback failed", self.node_name)
