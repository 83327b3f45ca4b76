"""How a tool call is asked for, read and checked (seed 004 §4, seed 003 §5.2-5.3): the prompt
that asks a model for a call (`prompting`), the reading of the call it wrote (`calls`) and the
guard that validates and repairs it (`guard`). The evaluate stage's tool-call scorer, the agent
loop and doctor all read calls this one way."""
