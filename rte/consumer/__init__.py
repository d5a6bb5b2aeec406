"""The scheduler-side library, in rooms that call only downwards (docs/architecture.md): the
front end (:mod:`.api`), one scheduling cycle (:mod:`.cycle`), the decision kernel
(:mod:`.kernel`), the NRT caches (:mod:`.cache`), Filter and Score (:mod:`.filter`,
:mod:`.score`, :mod:`.kubelet_filter`, :mod:`.least_numa`), the zone views and requests
(:mod:`.numaview`, :mod:`.requests`, :mod:`.store`) and the settings (:mod:`.config`)."""
