"""Why the reserve cache may refuse a node whose kubelet has room: one short code per node.

The extender's ``/state`` shows it for every node and the simulator counts it for every node
that was refused while its kubelet could have admitted the pod, which explains the gap between
the cache and a scheduler that knows every kubelet (``rte simulate --cache oracle``).
"""

from __future__ import annotations

from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.resync import CompareResult

UNTRUSTED = "not-fresh"
NOT_ADOPTED = "no-nrt"
FINGERPRINT_MISMATCH = "fingerprint-mismatch"
WAITING_FOR_RESYNC = "waiting-for-resync"
RESERVED_EVERYWHERE = "reserved-on-every-zone"
RESERVED_ON_ZONES = "reserved-on-predicted-zones"
WAITING_FOR_AGENT = "waiting-for-agent"

EXPLANATIONS = {
    UNTRUSTED: "the cache distrusts the node (foreign pods, startup, stale heartbeat)",
    NOT_ADOPTED: "no NRT adopted for the node",
    FINGERPRINT_MISMATCH: "the newest NRT describes a pod set the cache does not know (yet): the"
    " node keeps an older NRT and its reservations",
    WAITING_FOR_RESYNC: "a newer NRT waits for the next resync (reference reconciliation)",
    RESERVED_EVERYWHERE: "pods the NRT does not account for yet are charged on every zone (on"
    " their way to the kubelet, or their zones are not knowable)",
    RESERVED_ON_ZONES: "pods the NRT does not account for yet are charged on the zones the"
    " kubelet uses; the NRT may lag resources freed since",
    WAITING_FOR_AGENT: "the NRT is the newest and accounts for every pod: it lags what the"
    " kubelet freed since its agent read it",
}


def diagnose(st: NodeState | None, unfresh: str, store_revision: int, history: bool) -> str:
    """The code of the first reason, in this order, that the served view may understate the node."""
    if unfresh:
        return UNTRUSTED
    if st is None or st.topology is None:
        return NOT_ADOPTED
    if store_revision != st.revision:
        if history:
            return FINGERPRINT_MISMATCH
        compared = st.last_compare
        if compared is not None and compared.result is not CompareResult.MATCH and st.dirty:
            return FINGERPRINT_MISMATCH
        return WAITING_FOR_RESYNC
    if any(not st.narrowed(key, r) for key, r in st.reservations.items()):
        return RESERVED_EVERYWHERE
    if st.reservations:
        return RESERVED_ON_ZONES
    return WAITING_FOR_AGENT
