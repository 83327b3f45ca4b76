"""serve's loop room: what live traffic leaves for the next selection round: sampled requests
judged and written as eval JSONL, their cloud references, and past scrapes of /metrics for
`edgepick monitor --window` (docs/architecture.md, "serve's rooms")."""
