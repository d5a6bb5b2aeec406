"""Read-only views of a live cluster for people debugging placement (``rte top``, ``explain``, ``fit``).

* :mod:`rte.cluster.reader` reads Nodes, NRTs, pods and the agents' Leases through the
  Kubernetes client and turns every failure into one line (missing CRD, unreachable apiserver,
  RBAC);
* :mod:`rte.cluster.status` is pure: per node, its zones, how old its NRT and Lease are, and
  whether the NRT's fingerprint matches the pods bound to it (the consumer's rules);
* :mod:`rte.cluster.shortfall` is pure: what a node's best NUMA zone lacks for a pod.

A front end of the consumer, beside the extender and the simulator: it uses the consumer and the
model, never the agent.
"""
