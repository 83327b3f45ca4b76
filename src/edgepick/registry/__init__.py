"""Model registry: versions of model files verified by SHA-256, an atomic active pointer,
activation once the engine is healthy, rollback (seed 001 §6.3-6.4). See docs/registry.md."""
