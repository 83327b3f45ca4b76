"""Convert a model to another engine's format: ONNX Runtime GenAI INT4 from a GGUF, torch-free
(seed 001 §4, seed 003 §4.3). See docs/engines.md."""
