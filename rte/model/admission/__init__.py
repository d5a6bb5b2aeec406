"""Kubelet admission of a pod on one node: the Topology Manager and its hint providers, as a pure model.

The kubelet admits a pod unit by unit (kubernetes/kubernetes ``pkg/kubelet/cm/topologymanager``
``scope_container.go`` and ``scope_pod.go``, ``Admit``): each hint provider (the CPU manager's
static policy, the memory manager's Static policy, the device manager) proposes NUMA masks for
what the unit requests, the Topology Manager merges them and its policy decides, then every
provider allocates within the merged mask before the next unit is hinted. This package models
that pipeline over per-zone counts, with no I/O:

* :mod:`.masks`: NUMA masks, the kubelet's enumeration order, narrowness and distance;
* :mod:`.node`: what the model reads: per-zone resources and node facts (:class:`NodeResources`,
  :class:`NodeFacts`), and the working counts between units (:class:`Working`);
* :mod:`.units`: the units of a pod and what each asks every manager for;
* :mod:`.hints`: the three providers' hints;
* :mod:`.merge`: the hint merge and the four policies;
* :mod:`.allocate`: the step between units (:class:`CountAllocator` by default);
* :mod:`.admit`: the whole admission (:func:`admit_pod`), its verdict and reasons.

The consumer's Filter builds the node from an NRT; the simulator builds it from its exact state
and brings an allocator that knows CPU ids.
"""
