"""The range of a node score, shared by every Score strategy and the extender's rescaling.

kube-scheduler's framework expects Score plugins to return ``MinScore``..``MaxScore``, 0..100
(kubernetes/kubernetes ``staging/src/k8s.io/kube-scheduler/framework/interface.go``).
"""

from __future__ import annotations

MIN_SCORE = 0
MAX_SCORE = 100
