"""evalcore: evaluate the retrieval half of RAG, end to end, with honest statistics."""
from __future__ import annotations

__version__ = "0.2.0"
# Stamped on every document a run indexes; bump when chunking/embedding changes.
PIPELINE_VERSION = "evalcore-pipeline/1"
