"""Process plumbing shared by the long-running commands (``rte run``, ``rte extender``).

Rate limiting, the list + watch reflector, the Kubernetes client factory, the signal waiter and
the small HTTP server. It sits below :mod:`rte.agent` and :mod:`rte.extender` and imports
neither; the consumer and the model never import it. Importing the package costs nothing: each
module loads its own dependencies (the ``kubernetes`` client only when a client is built).
"""
