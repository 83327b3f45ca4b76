"""serve's engine room: one engine child (`EngineProcess`, llama-server its implementation and
the only code that knows its command line), requests sent to it over loopback, its supervision
(liveness, restarts and their budget, switches, the memory watchdog) and the queries beside
generation (tokenizer, props, slot counters). It knows nothing of admission or of HTTP clients
(docs/architecture.md, "serve's rooms")."""
