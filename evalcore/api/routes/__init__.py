"""One module per resource of ``/api/v1``: :mod:`health`, :mod:`runs` (runs, claims, decisions,
the gate), :mod:`deployments` (deployments and their traffic), :mod:`evaluations`."""
