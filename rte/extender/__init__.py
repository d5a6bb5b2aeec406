"""The kube-scheduler HTTP extender (``rte extender``): the consumer behind kube-scheduler's extender API.

Kept outside :mod:`rte.consumer` because :mod:`rte.extender.watch` needs the Kubernetes client,
which the consumer package must not import.
"""
