"""The scheduler-side NRT caches: what the filter and the score see between agent updates.

* :mod:`~rte.consumer.cache.interface`: what every cache offers (:class:`NRTCache`, lookups,
  resync reports);
* :mod:`~rte.consumer.config`: the reference plugin's cache arguments plus rte's additions;
* :mod:`~rte.consumer.cache.selection`: which cache the settings select;
* :mod:`~rte.consumer.cache.overreserve`: the reserve cache (pessimistic accounting, fingerprint
  resync), with its per-node state (:mod:`~rte.consumer.cache.nodestate`), its reservations
  (:mod:`~rte.consumer.cache.reservations`) and the resync check
  (:mod:`~rte.consumer.cache.resync`);
* :mod:`~rte.consumer.cache.passthrough` and :mod:`~rte.consumer.cache.discardreserved`: the
  two caches without accounting;
* :mod:`~rte.consumer.cache.freshness`: the agent-heartbeat rule every cache applies.
"""
