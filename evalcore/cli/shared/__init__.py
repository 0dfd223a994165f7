"""What every command shares: :mod:`~evalcore.cli.shared.common` (open the store, print JSON,
write a file) and :mod:`~evalcore.cli.shared.options` (the option builders)."""
