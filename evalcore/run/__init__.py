"""A run, made one way: the spec (:mod:`~evalcore.run.spec`), :func:`~evalcore.run.execute.execute`,
the built-in pipeline's runner and stages, and ``evaluate`` for a Python retriever."""
