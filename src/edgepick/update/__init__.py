"""Model updates as verified deltas (seed 001 §6.4: "if the model is larger, consider a
differential update that pushes only the weights that changed"): a per-tensor manifest of a GGUF,
a package holding only what changed, its streaming application, fetching it over HTTP with
resume, and the fidelity probe a new version passes before it serves. See docs/registry.md."""
