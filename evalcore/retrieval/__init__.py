"""The retrievers: names (which exist, how they are written), dense, bm25 (the index and its
analyzers), hybrid (RRF), rerank, and ranking (exact top hits and ranks of a block of queries).
The compiled passes are behind them in engine/; the same retrieval on Ray actors is sharded/."""
