"""A loopback OpenAI-compatible "cloud" for tests: answers every chat request with one fixed
text and keeps every request body it was sent, so a test can show what reached the cloud."""

from __future__ import annotations

import threading

import uvicorn
from fastapi import FastAPI, Request

from llama_server import free_port
from serve_harness import wait_until

REFERENCE = "The cloud's answer."


class RecordingCloud:
    """An OpenAI-compatible loopback server that keeps every request body it is sent."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.port = free_port()
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> dict:
            self.bodies.append(await request.json())
            return {"id": "c", "object": "chat.completion", "created": 0, "model": "cloud",
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": REFERENCE}}]}

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "RecordingCloud":
        self.thread.start()
        wait_until("loopback cloud up", lambda: self.server.started, 20)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)
