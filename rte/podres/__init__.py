"""The kubelet's podresources v1 API: what it says each pod holds, and what the node offers.

* :mod:`rte.podres.client`: the gRPC client on the kubelet's unix socket (deadlines, one-line
  errors; an API the kubelet does not serve is :class:`~rte.errors.NotSupportedError`);
* :mod:`rte.podres.files`: the same answers from a scenario directory (the fixtures, ``rte dump
  --podresources DIR``); :mod:`rte.podres.source` is what both offer;
* :mod:`rte.podres.types` and :mod:`rte.podres.convert`: typed, immutable results from protobuf
  messages or JSON; :mod:`rte.podres.wire`: a List response cut into its pods' bytes, to find
  what changed without decoding it all;
* ``rte.podres.v1``: the generated stubs (``hack/check-protos.sh`` keeps them current).

Only the agent (and ``rte fingerprint --podresources``) imports this package; the consumer never
does.
"""
