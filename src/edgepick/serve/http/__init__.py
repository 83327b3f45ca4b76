"""serve's HTTP room: the FastAPI app and the ASGI layer in front of it, the handlers (OpenAI's
API, Ollama's under ollama/, embeddings, the engine's own endpoints, /ui, the loop's feedback),
reading and checking a request, and relaying its answer measured. It hands a checked request to
the router and never starts, queues or restarts an engine itself: that is pool/'s and engine/'s
work (docs/architecture.md, "serve's rooms")."""
