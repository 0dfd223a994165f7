"""What every route of the API is served through: keys and scopes (``auth``), their snapshots
(``snapshots``), rates (``rate``), the limits on connections, bodies and time (``connections``,
``limits``, ``settings``), ETags (``revalidate``), and the answers themselves: JSON
(``jsonout``) and problem+json (``problems``). Nothing here imports a route."""
