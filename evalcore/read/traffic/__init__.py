"""The read side of stored traffic: :mod:`~evalcore.read.traffic.stored` (the stored queries,
their gate values and the refused share) and :mod:`~evalcore.read.traffic.periods` (the
traffic cut into periods, with drift per period)."""
