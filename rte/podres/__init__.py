"""The kubelet's podresources API. :mod:`.source` is the one seam its users see (the
:class:`~.source.KubeletReader` protocol and its :class:`~.source.Listing`); :mod:`.reader`
implements it over the gRPC socket (:mod:`.client`, :mod:`.wire`, :mod:`.convert`) or a scenario
directory (:mod:`.files`)."""
