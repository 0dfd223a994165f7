"""The built-in pipeline: chunking, embedding and its runtimes, retrieval, ranking, scoring, the runner."""
