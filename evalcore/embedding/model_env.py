"""What every embedding runtime shares: the offline switches and the NOTE log level.

Both :mod:`evalcore.embedding.embedder` and :mod:`evalcore.embedding.onnx_runtime` import
this module, so neither needs the other for it.
"""

from __future__ import annotations

import logging
import os

# A log level between INFO and WARNING for what a user should read once but need not act on
# (the CLI shows it by default, as "NOTE").
NOTE = 25
logging.addLevelName(NOTE, "NOTE")


def offline() -> None:
    """Keep Hugging Face libraries from reaching the network (unless the operator set otherwise)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
