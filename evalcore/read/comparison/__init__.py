"""A comparison of configurations read back: :mod:`evalcore.read.comparison.statements` (what
the comparison says in words: the best configuration against the runner-up, one pair's detail,
the significant pairs, the decided configuration). The comparison itself (recall@k tables, the
paired win/loss matrix) is :mod:`evalcore.read.compare`."""
