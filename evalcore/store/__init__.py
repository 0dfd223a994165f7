"""The run store: one DuckDB file, its connection and migrations, and the one writer of each table."""
