"""The words the agent, the consumer and the simulator share: one enum per concept.

Input is read in any case (``dedicated``, ``DEDICATED`` and ``Dedicated`` are one mode), so a
setting copied from either side's documentation works. Output always uses one spelling per
concept, the enum's value:

* :class:`InformerMode`: ``Dedicated`` / ``Shared``, the spelling of the scheduler plugin's
  ``cache.informerMode`` argument (kubernetes-sigs/scheduler-plugins
  ``apis/config/types.go``). The agent's ``informer_mode`` setting names the same mode (it
  must match the scheduler's), so it prints the same spelling.
* :class:`FingerprintMethod`: ``all`` / ``with-exclusive-resources``, the values of the NRT's
  ``nodeTopologyPodsFingerprintMethod`` attribute (k8stopologyawareschedwg/podfingerprint
  ``podfingerprint.go``), which consumers compare byte for byte.
* :class:`Compat`: ``kubelet`` / ``reference``, whose admission decisions the consumer
  reproduces (``rte fit``, ``rte extender`` and ``rte simulate`` take it as ``--compat``).
* :class:`NumaPlacementMode`: ``container`` / ``none``, the numaresources-operator's
  ``NUMAPlacementMode``: whether the agent publishes the numaplacement attributes.
* :class:`ZoneNames`: ``numa-id`` / ``dense``, how the agent numbers the zones it publishes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from rte.errors import ConfigError


class Choice(StrEnum):
    """A closed set of spellings: parsed in any case, printed as the member's value."""

    @classmethod
    def parse(cls, text: object, source: str) -> Self:
        """The member spelled ``text`` in any case, or a one-line :class:`ConfigError` naming ``source``."""
        if type(text) is cls:  # already parsed (the library's callers pass members along)
            return text
        if isinstance(text, str):
            folded = text.casefold()
            for member in cls:
                if member.value.casefold() == folded:
                    return member
        accepted = ", ".join(m.value for m in cls)
        raise ConfigError(source, f"{text!r} is not one of {accepted}")


class InformerMode(Choice):
    """Which pods the scheduler's pod informer sees, and so which pods a node's fingerprint counts."""

    DEDICATED = "Dedicated"
    """Every pod bound to the node that left ``Pending``, terminal pods included."""
    SHARED = "Shared"
    """Only ``Running`` pods (the shared informer drops the others)."""


class FingerprintMethod(Choice):
    """Which of a node's pods the published fingerprint covers."""

    ALL = "all"
    WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"
    """Only pods holding exclusive resources (:func:`rte.model.exclusive.is_exclusive`)."""


class Compat(Choice):
    """Whose decisions the consumer reproduces: the kubelet's admission, or the reference plugin's.

    ``kubelet`` (the default) decides as the node's kubelet admits (:mod:`rte.model.admission`);
    ``reference`` reproduces kubernetes-sigs/scheduler-plugins ``NodeResourceTopologyMatch``
    bit for bit (its ``single-numa-node``-only Filter, its sidecar and init-container rules, its
    Score gating), for a cluster that must behave exactly like that plugin.
    """

    KUBELET = "kubelet"
    REFERENCE = "reference"


class NumaPlacementMode(Choice):
    """Whether the agent publishes the numaplacement attributes (RTE PR #402's switch).

    The values are the numaresources-operator's ``NUMAPlacementMode`` (``container`` | ``none``).
    """

    CONTAINER = "container"
    """Publish which NUMA node each exclusive container sits on (:mod:`rte.agent.compute.placement`)."""
    NONE = "none"
    """Publish no placement: consumers fall back to their behaviour without it."""


class ZoneNames(Choice):
    """How the agent numbers its zones: ``node-<kernel NUMA id>``, or ``node-0..node-<k-1>``.

    They differ only on a node whose NUMA ids are sparse (an offline or absent node: ids 0, 2, 3).
    ``dense`` exists for consumers that index arrays by the id (scheduler-plugins' Score); the
    costs and trade-offs are in docs/compatibility.md and :mod:`rte.agent.compute.zonenames`.
    """

    NUMA_ID = "numa-id"
    """``node-<id>`` with the kernel's NUMA id: truthful, and stable when a node comes online."""
    DENSE = "dense"
    """``node-<i>`` with ``i`` the position of the NUMA id among the node's ids in ascending order."""
