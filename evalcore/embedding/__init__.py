"""Embedding and its runtimes: the embedder (sentence-transformers or the ONNX path, with the
store-backed cache), the ONNX runtime (OpenVINO / ONNX Runtime), several models in one run,
the offline environment, and Ray Data batch inference."""
