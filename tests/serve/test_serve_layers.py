"""serve in rooms, checked on the code: no module in serve/ or its rooms over 300 lines and
no function over 80 (docs/architecture.md, "serve's rooms"; the rooms' import direction is
import-linter's serve-rooms contract in pyproject.toml); the engine behind its process
protocol (shared code never names llama-server); the router protocol complete."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import edgepick.serve

SERVE = Path(edgepick.serve.__file__).parent
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(SERVE.rglob("*.py"))


def _name(p: Path) -> str:
    return p.relative_to(SERVE).as_posix()


def test_no_module_in_serve_is_over_300_lines():
    long = {_name(p): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"serve modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_in_serve_or_plan_is_over_80_lines():
    import edgepick.plan

    plan = sorted(Path(edgepick.plan.__file__).parent.glob("*.py"))
    long = []
    for p in _modules() + plan:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    where = _name(p) if p.is_relative_to(SERVE) else p.name
                    long.append(f"{where}:{node.lineno} {node.name} ({n} lines)")
    assert not long, f"serve and plan functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_only_the_llama_server_engine_starts_llama_server():
    """The pool, the supervisor and the handlers reach an engine through `EngineProcess`; the
    command line of llama-server is its implementation's alone (serve/engine/llama_server.py)."""
    naming = [_name(p) for p in _modules()
              if '"llama-server"' in p.read_text(encoding="utf-8")]
    assert naming == ["engine/llama_server.py"], naming


def test_the_router_protocol_declares_what_serve_reads():
    from edgepick.serve.router_api import EdgeOnlyRouter, Router, complete

    class Older:  # a plugin router from before task_of and max_prompt_tokens were declared
        async def route(self, request, edge):
            raise AssertionError

        async def aclose(self):
            return None

    assert {"task_of", "max_prompt_tokens", "route", "aclose"} <= typing._get_protocol_attrs(Router)
    assert isinstance(EdgeOnlyRouter(), Router)
    done = complete(Older())
    assert isinstance(done, Router) and done.max_prompt_tokens is None
    for p in _modules():
        text = p.read_text(encoding="utf-8")
        assert 'getattr(self.router' not in text and 'getattr(state.router' not in text, _name(p)
