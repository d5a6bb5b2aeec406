"""The kubelet's podresources v1 API: what it says each pod holds, and what the node offers.

* :mod:`.source`: the one seam its users see, the :class:`~.source.KubeletReader` protocol and
  its :class:`~.source.Listing` (the pods, their digest, what changed);
* :mod:`.reader` implements it over the gRPC socket (:mod:`.client`: deadlines, one-line errors;
  an API the kubelet does not serve is :class:`~rte.errors.NotSupportedError`; :mod:`.wire`: a
  List response cut into its pods' bytes, to find what changed without decoding it all) or a
  scenario directory (:mod:`.files`: the fixtures, ``rte dump --podresources DIR``);
* :mod:`.types` and :mod:`.convert`: typed, immutable results from protobuf messages or JSON;
* ``rte.podres.v1``: the generated stubs (``hack/check-protos.sh`` keeps them current).

Only the agent (and ``rte fingerprint --podresources``) imports this package; the consumer never
does.
"""
