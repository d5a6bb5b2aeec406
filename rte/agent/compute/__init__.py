"""The agent's pure core: one node reading in, one NodeTopology out.

Accounting (CPU, memory, devices), the List checks, the pod tally and the fingerprinted pod set,
and the object builder. Nothing here does I/O, starts a thread or talks to the kubelet or the
apiserver (an import-linter contract in pyproject.toml keeps it so); the daemon beside it in
:mod:`rte.agent` reads, paces and publishes.
"""
