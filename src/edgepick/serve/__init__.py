"""`edgepick serve`: the chosen configuration as a local OpenAI-compatible service (docs/serve.md,
seed 000 §4.3, §5.2-5.3, §7.4; seed 001 §6.3-6.4). Design in docs/serve.md.

Four rooms, each importing only those below it: http/ (the app and its handlers), pool/ and
loop/ (admission, residency and the engine pools; traffic sampling), engine/ (one engine child
and its supervision); the modules here are the vocabulary they share (refusals, the router
contract, request models, metrics, settings) and, on top, assemble.py and run.py, which put a
server together and run it (docs/architecture.md, "serve's rooms")."""
