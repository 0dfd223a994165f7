"""Real users' queries: reading a query log, replaying it against a configuration, drift, the check."""
