"""A discrete-event cluster simulator over the real agent and consumer code (see ``engine``).

It imports both halves (it is neither): simulated kubelets feed the real accounting, pod-set and
builder code; the scheduler runs the real Filter, Score and NRT caches. ``rte simulate`` is its
command line.
"""
