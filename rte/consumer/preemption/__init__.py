"""NUMA-aware preemption: which pods to evict so that the kubelet admits a pod, never for nothing.

kube-scheduler's default preemption (kubernetes/kubernetes
``pkg/scheduler/framework/preemption/preemption.go``, ``SelectVictimsOnNode`` of
``plugins/defaultpreemption``) frees room node-wide: on a multi-NUMA node it may evict pods whose
CPUs sit on a zone the preemptor cannot use, and the NUMA Filter then rejects the node again.
Here a victim set is kept only when the kubelet's admission model admits the pod once the
victims' resources are given back to the zones they held (:mod:`.victims`), and where a pod
sits comes from a small seam (:mod:`.placements`): decoded numaplacement attributes or the
reserve cache's own knowledge.
"""
