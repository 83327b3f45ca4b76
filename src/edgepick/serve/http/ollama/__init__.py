"""Ollama's native API (`/api/chat`, `/api/generate`, `/api/embed`, `/api/tags`, `/api/ps`,
`/api/show`, `/api/version`) beside the OpenAI one, on the same port and through the same
checks, admission, routing, constraints, team residency and metrics: a request is translated
into the OpenAI body serve already checks (requests.py), runs through serve/http/generate.py's path,
and its answer is translated back (answers.py, streams.py). Ollama's docs/api.md and the
`ollama` Python client's _types.py are the reference for every shape."""
