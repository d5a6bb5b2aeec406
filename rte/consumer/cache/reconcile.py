"""How the reserve cache brings a node up to date: adopting an NRT, and which reservations remain.

**Reconciling on every NRT** (``Reconcile.HISTORY``, the default). Per node the cache keeps the
recent pod sets of the node (:class:`~rte.consumer.cache.podlog.PodLog`, fed by every pod event)
and the pods bound to it that still hold resources (``live``). When a node's NRT changes, or a pod
event may have completed the set it describes, :func:`try_history` looks for the NRT's
fingerprint among those sets. On a match with the set ``S`` (the *accounted* pods) the NRT is
adopted and :func:`adopt` keeps the reservation of every pod outside ``S`` and adds one for every
live pod outside ``S`` that has none (bound by a peer or another scheduler, or in flight). A pod
whose deletion or termination the cache sees loses its reservation at once (:func:`track`).
No match: the node keeps its adopted NRT and its reservations, and retries on the next pod
event of the node, the next NRT or the next resync.

**Why this never admits more than the kubelet can.** Write ``A(z)`` for what the adopted NRT
says zone ``z`` has available, ``T(z)`` for what the kubelet really has free now. The NRT was
computed from the kubelet when exactly the pods of ``S`` were counted, and an agent never counts
a pod its accounting has not charged (:mod:`rte.agent.compute.podset`). Since then, the kubelet's zone
``z`` changed only by pods admitted after the agent read it, all outside ``S`` (each takes at
most its request from ``z``), and by pods that ended (each gives back what it held). Every pod
outside ``S`` that can hold resources on the node now is either placed by us (it has a
reservation since Reserve) or bound and seen by the pod informer: it got a reservation at
adoption if it was known then, or when the cache first saw it (:func:`track`: a pod new to the
cache cannot be in ``S``). So ``T(z) >= A(z) - sum(requests of reserved pods)``, and that is
what the cache serves (each reservation taken from every zone the kubelet may have put it on:
every zone, or for an admitted pod placed alone the zones :mod:`rte.consumer.cache.predict`
names). A pod of ``S`` that ended since gives back what it held, so crediting its hold back to
its zone keeps the bound when the hold is known exactly (:mod:`rte.consumer.cache.placement`
learns it from two NRTs and states when). Releasing a reservation is
safe when the pod joins an adopted ``S`` (the NRT now charges it) or when it is deleted or
terminal (the kubelet gives its resources back; a pod of ``S`` deleted later is still charged by
the NRT, which errs on the safe side). The credits aside (they also need NRTs that charge exactly
the pods of their set), the argument needs only the fingerprint, so it holds for NRTs from the
reference agents too; it assumes, like every fingerprint check, that two different
pod sets never share a fingerprint.

``Reconcile.EXACT`` keeps the reference plugin's rule: a dirty node is adopted at resync only
when its NRT matches the node's current pod set (:func:`flush`, which keeps only the in-flight
reservations, right because every relevant pod is then in ``S``).

The reserve cache's differences from the reference plugin, each pinned by a test:

* NRTs are read from a watch-fed :class:`~rte.consumer.store.NRTStore`; a node whose NRT appears
  after start is adopted on first use (the reference ignores it,
  kubernetes-sigs/scheduler-plugins#967). A node with no reservation and no mark adopts every
  new NRT at once (``follow_clean_nodes``): nothing of ours can be missing from it.
* A node with zero relevant pods resyncs against the empty-set fingerprint.
* Exclusivity is classified against the resource names of the NRT being checked, not of the
  older cached one (docs/fingerprint-agreement.md, "The mismatch trap", last row).
* A flush keeps the reservations of pods still *in flight* (reserved or bound, not yet relevant,
  so in no fingerprinted set and reflected by no NRT) and adds one for every in-flight pod bound
  to the node that has none (placed by a previous incarnation, a peer or another scheduler).
  The reference drops them all and opens an over-commit window. Config-change flushes too.
* A foreign pod that is deleted or has finished only marks the node dirty: it frees resources,
  so the cached view errs on the safe side, and blocking the node would be pointless.
* The config-change flush keeps the dirty/foreign marks (nothing was verified) and notices
  changes by comparing against the store at resync time, not from a separate watch.
* Reservations for a node without an NRT are recorded (its NRT may appear later) and pruned to
  the in-flight ones at resync, so they cannot pile up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from rte.consumer.cache import placement
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.podlog import compact
from rte.consumer.cache.reservations import SOURCE_IN_FLIGHT, SOURCE_UNACCOUNTED, Reservation
from rte.consumer.cache.resync import expected_fingerprint, is_in_flight, is_relevant
from rte.consumer.config import CacheConfig
from rte.consumer.placement import NO_PLACEMENT, NodePlacement, Outcome, decode_node_placement
from rte.consumer.store import DELETED, MODIFIED
from rte.model import numaplacement as npl
from rte.model.exclusive import is_exclusive
from rte.model.pod import Pod, PodKey
from rte.model.topology import NodeTopology


def track(
    st: NodeState, event_type: str, pod: Pod, config: CacheConfig, names: Iterable[str], now: float = 0.0
) -> bool:
    """Feed one pod event of the node ``st`` describes; True when its pod set changed.

    A deleted or terminal pod gives its resources back: its reservation goes.
    """
    key = pod.key
    gone = event_type == DELETED or pod.is_terminal
    counted = event_type != DELETED and is_relevant(pod, config.informer_mode)
    changed = st.log.update(key, counted, counted and is_exclusive(pod, frozenset(names)))
    if changed and key in st.reservations:
        st.invalidate()  # admitted: its reservation may narrow to its zones
    if gone:
        if key in st.live:
            st.remember_ended(key, st.live[key])
            del st.own_live()[key]
        if key in st.holds and placement.released(st.own_credits(), st.holds, key, key in st.accounted):
            st.invalidate()  # the NRT still charges what it gave back
        reservation = st.reservations.get(key)
        if reservation is not None and (not reservation.uid or not pod.uid or reservation.uid == pod.uid):
            del st.own_reservations()[key]
            st.invalidate()
    else:
        if key not in st.live:
            if key in st.holds:  # a new incarnation under the name: what we knew is not its
                del st.own_holds()[key]
            if key in st.credits:
                del st.own_credits()[key]
                st.invalidate()
        if key not in st.reservations and key not in st.live:
            if not counted:
                spread_in_flight(st)  # bound by someone else, on its way beside ours
            if st.topology is not None and key not in st.accounted:
                # New to the cache, so not among the pods the adopted NRT accounts for.
                st.own_reservations()[key] = Reservation.for_pod(pod, now, SOURCE_UNACCOUNTED)
                st.invalidate()
        st.own_live()[key] = pod
    st.live = compact(st.live)  # a node's one pod: a Single, not a dict (issue #27)
    return changed


def in_flight(st: NodeState) -> bool:
    """Some pod reserved on the node is not known to be admitted (or refused) yet."""
    return any(key not in st.log.members for key in st.reservations)


def spread_in_flight(st: NodeState) -> None:
    """Another pod is on its way to the node beside those in flight: the kubelet may admit them in
    any order, so none of them keeps its zones (:mod:`rte.consumer.cache.predict`)."""
    admitted = st.log.members
    if any(r.zones is not None and key not in admitted for key, r in st.reservations.items()):
        st.reservations = {
            key: r if r.zones is None or key in admitted else replace(r, zones=None)
            for key, r in st.reservations.items()
        }
        st.invalidate()


def try_history(
    st: NodeState,
    topology: NodeTopology,
    revision: int,
    config: CacheConfig,
    now: float,
    tally: dict[str, int] | None = None,
) -> bool:
    """Adopt ``topology`` when its fingerprint names one of the node's recent pod sets."""
    st.tried_revision, st.tried_version = revision, st.log.version
    expected, only_exclusive, _ = expected_fingerprint(topology, config.resync_method)
    if not expected:
        return False
    cut = st.log.find(expected, only_exclusive)
    if cut is None:
        st.mismatches += 1
        return False
    adopt(st, topology, revision, st.log.members_at(cut), now, tally=tally)
    st.log.forget_before(cut)
    # The log now starts at the NRT's set, whose fingerprint the NRT carries as equal text: one
    # string for both, not two (issue #27: 73 bytes a node).
    if only_exclusive:
        st.log.start_exclusive = expected
    else:
        st.log.start_all = expected
    st.adoptions += 1
    return True


def forget(st: NodeState, key: PodKey) -> None:
    """The pod vanished from the pod list (a deletion event was missed): it holds nothing now."""
    st.log.update(key, False)
    if key in st.live:
        del st.own_live()[key]
        st.live = compact(st.live)
        if key in st.reservations:
            del st.own_reservations()[key]
            st.invalidate()


def adopt(
    st: NodeState,
    topology: NodeTopology,
    revision: int,
    accounted: set[PodKey],
    now: float,
    *,
    verified: bool = True,
    tally: dict[str, int] | None = None,
) -> None:
    """Serve ``topology``, which charges the pods of ``accounted``: charge every other live pod.

    ``verified`` False (no fingerprint match: a first NRT, or a Topology Manager change) keeps
    the node's marks. A verified NRT's numaplacement is decoded for the pods of ``accounted``
    (:func:`_decode_placement`), its outcome counted in ``tally``.
    """
    if verified:
        st.placement = decoded = _decode_placement(st, topology, accounted)
        if tally is not None:
            tally[decoded.outcome.value] = tally.get(decoded.outcome.value, 0) + 1
        if st.topology is not None:
            learnt = placement.learn(
                st.own_holds(), st.topology, st.accounted, topology, accounted, st.live, decoded, st.ended
            )
            for key in learnt:
                if key not in st.live:  # ended since the agent read it: the new NRT still charges it
                    placement.released(st.own_credits(), st.holds, key, True)
    else:
        st.placement = None
    st.ended = compact({k: p for k, p in st.ended.items() if k in accounted})
    st.credits = compact(placement.kept_credits(st.credits, accounted if verified else ()))
    st.holds = compact(placement.kept_holds(st.holds, accounted, st.live))
    kept = {key: r for key, r in st.reservations.items() if key not in accounted}
    for key, pod in st.live.items():
        if key not in accounted and key not in kept:
            kept[key] = Reservation.for_pod(pod, now, SOURCE_UNACCOUNTED)
    st.reservations = compact(kept)
    st.accounted = accounted
    st.topology = topology
    st.revision = st.checked_revision = revision
    st.last_flush = now
    st.invalidate(topology_changed=True)
    if verified:
        st.dirty = False
        st.failures = st.streak = st.foreign = 0
        st.unverified = False


def _decode_placement(st: NodeState, topology: NodeTopology, accounted: set[PodKey]) -> NodePlacement:
    """The numaplacement of ``topology`` for the pods it accounts for (their live spec, or the
    last one of those that ended since); a MISMATCH when one of them is not known."""
    if topology.attribute(npl.METADATA_ATTRIBUTE) is None:
        return NO_PLACEMENT  # the common case, before gathering any pod
    pods = []
    for key in accounted:
        pod = st.live.get(key) or st.ended.get(key)
        if pod is None:
            return NodePlacement(Outcome.MISMATCH, detail=f"no spec of {key[0]}/{key[1]}")
        pods.append(pod)
    memo = st.pinned if st.pinned is not None else {}
    decoded = decode_node_placement(topology, pods, memo)
    # Kept for the next NRT of this node, only for the pods this one counts (the rest ended).
    st.pinned = memo if len(memo) <= len(pods) else {k: v for k, v in memo.items() if k in accounted}
    return decoded


def kept_reservations(
    node: str, st: NodeState, known: Mapping[PodKey, Pod], now: float, config: CacheConfig
) -> dict[PodKey, Reservation]:
    """The reservations an exact match keeps: pods in flight, or not listed yet (within the grace)."""
    kept: dict[PodKey, Reservation] = {}
    for key, reservation in st.reservations.items():
        pod = known.get(key)
        if pod is not None and reservation.uid and pod.uid and pod.uid != reservation.uid:
            pod = None  # deleted and recreated under the same name: ours is gone
        if pod is None:
            if now - reservation.reserved_at < config.absent_pod_grace:
                kept[key] = reservation
        elif is_in_flight(pod, node, config.informer_mode):
            kept[key] = reservation
    return kept


def flush(
    node: str,
    st: NodeState,
    topology: NodeTopology,
    revision: int,
    on_node: Iterable[Pod],
    known: Mapping[PodKey, Pod],
    now: float,
    config: CacheConfig,
    *,
    matched: bool,
) -> None:
    """The reference's flush (an exact match, or a Topology Manager change), gaps fixed."""
    kept = kept_reservations(node, st, known, now, config)
    for pod in on_node:
        if pod.key not in kept and is_in_flight(pod, node, config.informer_mode):
            kept[pod.key] = Reservation.for_pod(pod, now, SOURCE_IN_FLIGHT)
    st.reservations = compact(kept)
    st.topology = topology
    st.revision = st.checked_revision = revision
    st.last_flush = now
    st.invalidate(topology_changed=True)
    if matched:
        st.dirty = False
        st.failures = st.streak = st.foreign = 0
        st.unverified = False


def prune_absent(
    node: str, st: NodeState, known: Mapping[PodKey, Pod], now: float, config: CacheConfig
) -> None:
    """History mode, at resync: drop reservations of pods gone from the pod list for longer than
    the grace (their deletion event was missed), keeping every pod still on the node."""
    kept: dict[PodKey, Reservation] = {}
    for key, reservation in st.reservations.items():
        pod = known.get(key)
        if pod is not None and reservation.uid and pod.uid and pod.uid != reservation.uid:
            pod = None
        if pod is None:
            if now - reservation.reserved_at < config.absent_pod_grace:
                kept[key] = reservation
        elif not pod.is_terminal and pod.node_name in ("", node):
            kept[key] = reservation
    if len(kept) != len(st.reservations):
        st.reservations = compact(kept)
        st.invalidate()


def sync_pods(
    node: str,
    st: NodeState,
    on_node: Iterable[Pod],
    known: Mapping[PodKey, Pod],
    names: Iterable[str],
    now: float,
    config: CacheConfig,
) -> None:
    """History mode, at resync: catch up with the pod list (front ends without pod events, or
    events missed) and prune the reservations of pods gone from it."""
    names = frozenset(names)
    seen: set[PodKey] = set()
    for pod in on_node:
        seen.add(pod.key)
        if st.live.get(pod.key) is not pod:
            track(st, MODIFIED, pod, config, names, now)
    for key in [k for k in st.log.members.keys() | st.live.keys() if k not in seen]:
        forget(st, key)
    prune_absent(node, st, known, now, config)
