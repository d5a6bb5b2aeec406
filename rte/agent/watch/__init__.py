"""What wakes the agent between its periodic reads: files (inotify on the kubelet's state,
notify and device-plugin paths) and this node's pods (the pod watch, TopologyAffinityError
rejections)."""
