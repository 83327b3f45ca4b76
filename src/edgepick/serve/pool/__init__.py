"""serve's admission and residency room: the engine pools (`EdgePool` for one model, `TeamPool`
for a team within a memory budget), the admission that bounds what is in, the forwarding of an
admitted request to the engine, prompt scoring, and what changes the served version (the
registry's control, hot swap by device signals and the policy file). It imports nothing from
http/ (docs/architecture.md, "serve's rooms")."""
