"""The decision kernel: Filter and Score of one pod over many nodes as array operations.

:class:`~rte.consumer.kernel.table.NodeTable` holds the nodes' views as columns (built once per
store change, rows rewritten in place); :func:`~rte.consumer.kernel.decide.decide` turns one
prepared pod into verdicts, reasons and scores for a selection of rows, exactly as the scalar
path (:func:`rte.consumer.filter.filter_node`, :class:`rte.consumer.score.Scorer`) would, which
it calls itself for the shapes the kernel does not cover; :mod:`~rte.consumer.kernel.memo` keeps
the last decisions current for pods of the same shape as rows are rewritten. NumPy is a
dependency of the consumer only: nothing on the agent's side imports this package.
"""
