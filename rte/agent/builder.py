"""Assemble the NodeTopology the agent publishes from the accounting and the kubelet settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rte.agent.accounting import Accounting
from rte.host.kubelet_config import KubeletConfig
from rte.model import attributes as names
from rte.model import fingerprint as fp
from rte.model.topology import Attribute, NodeTopology, OwnerReference
from rte.model.vocabulary import FingerprintMethod


def build_topology(
    node_name: str,
    accounting: Accounting,
    *,
    config: KubeletConfig | None,
    fingerprint_pods: Sequence[tuple[str, str]] | None,
    fingerprint_method: FingerprintMethod,
    owner: OwnerReference | None = None,
    extra_attributes: Mapping[str, str] | None = None,
) -> NodeTopology:
    """The canonical object for this node.

    The fingerprint, its method attribute and the legacy annotation are always published, also
    for an empty pod set (``fingerprint_pods=None`` leaves them out: nothing was counted).
    Topology Manager attributes come from the kubelet config (kubelet defaults applied), and the
    deprecated ``topologyPolicies`` is kept consistent with them for old consumers.
    """
    attrs: dict[str, str] = {}
    annotations: dict[str, str] = {}
    policies: tuple[str, ...] = ()
    if config is not None:
        attrs.update(config.nrt_attributes())
        policies = (config.topology_policies,)
    if accounting.non_numa_devices:
        attrs[names.NON_NUMA_DEVICES] = ",".join(f"{k}={v}" for k, v in accounting.non_numa_devices.items())
    if fingerprint_pods is not None:
        sign = fp.compute(fingerprint_pods)
        attrs[fp.ATTRIBUTE] = sign
        attrs[fp.ATTRIBUTE_METHOD] = fingerprint_method.value
        annotations[fp.ANNOTATION] = sign
    if extra_attributes:
        attrs.update(extra_attributes)
    return NodeTopology(
        name=node_name,
        zones=accounting.zones,
        attributes=tuple(Attribute(k, v) for k, v in attrs.items()),
        topology_policies=policies,
        annotations=annotations,
        owner_references=(owner,) if owner else (),
    ).canonical()
