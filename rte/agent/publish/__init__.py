"""Where the agent's objects go: the apiserver (the NRT publisher with its merge patches and
retry rules, the heartbeat Lease) or a stream (``rte dump``'s printer)."""
