"""The traffic tables' writers: :mod:`~evalcore.store.traffic.imported` (imported traffic,
labels, forget) and :mod:`~evalcore.store.traffic.posted` (the lines a deployment's client
posted, until the job runner replays them)."""
