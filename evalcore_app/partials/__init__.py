"""Parts a page draws (not pages): the Questions screen's "From real queries"
(:mod:`.triage`) and a logged query on the Query screen (:mod:`.traffic_query`)."""
