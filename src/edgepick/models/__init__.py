"""Model reading (GGUF headers, Hugging Face configs) and GGUF rewriting."""
