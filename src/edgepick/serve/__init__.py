"""`edgepick serve`: the chosen configuration as a local OpenAI-compatible service (docs/serve.md,
seed 000 §4.3, §5.2-5.3, §7.4; seed 001 §6.3-6.4). Design in docs/serve.md."""
