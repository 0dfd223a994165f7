"""The compiled engine behind retrieval: numba kernels over a row and over the BM25 build,
the word count, the exact order of one row, and how many threads work on a block."""
