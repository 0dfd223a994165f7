"""What the commands print in words: :mod:`~evalcore.cli.text.summary` (the one run summary),
:mod:`~evalcore.cli.text.compare_text` (a comparison) and :mod:`~evalcore.cli.text.claims_text`
(a threshold's claims)."""
