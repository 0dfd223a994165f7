"""Retrieval sharded on Ray (``--ray``): the driver, one shard (a Ray actor), and the merge of
the shards' answers into the ranks the one-machine engine gives."""
