"""Embedding and its runtimes: the embedder (sentence-transformers or the ONNX path), the
store-backed vector cache, long texts in bounded memory, the ONNX runtime (OpenVINO / ONNX
Runtime), several models in one run, the offline environment, and Ray Data batch inference."""
