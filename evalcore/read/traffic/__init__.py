"""The read side of stored traffic: :mod:`~evalcore.read.traffic.stored` (the stored queries,
their gate values and the refused share), :mod:`~evalcore.read.traffic.periods` (the
traffic cut into periods, with drift per period), :mod:`~evalcore.read.traffic.versions` (the
version a deployment runs now, and what of its traffic is stored) and
:mod:`~evalcore.read.traffic.known` (what an import or ``forget`` must know of the stored traffic
before it writes)."""
