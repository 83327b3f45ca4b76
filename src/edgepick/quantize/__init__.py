"""Quantize stage (docs/quantize.md): the ladder, importance matrices, per-unit sensitivity and
mixed-precision recipes, all built by llama.cpp's own `llama-quantize` / `llama-imatrix`."""
