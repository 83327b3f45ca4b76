"""A loopback OpenAI-compatible "cloud" that wants an API key, over https with a self-signed
certificate made for the test (openssl), or over plain http: it refuses a request without
`Authorization: Bearer <key>` (401, OpenAI's error shape) and streams one fixed answer."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from llama_server import free_port
from serve_harness import wait_until

ANSWER = "positive"


def self_signed(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, valid one day; the certificate is its own CA."""
    cert, key = folder / "cloud-cert.pem", folder / "cloud-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def _chunks(text: str, chat: bool) -> list[bytes]:
    obj = "chat.completion.chunk" if chat else "text_completion"
    piece = {"delta": {"content": text}} if chat else {"text": text}
    events = [{"object": obj, "model": "cloud", "choices": [{"index": 0, **piece,
                                                            "finish_reason": None}]},
              {"object": obj, "model": "cloud",
               "choices": [{"index": 0, "finish_reason": "stop",
                            **({"delta": {}} if chat else {"text": ""})}]},
              {"object": obj, "model": "cloud", "choices": [],
               "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}]
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


class KeyedCloud:
    def __init__(self, key: str, cert: tuple[Path, Path] | None = None) -> None:
        self.key, self.cert = key, cert
        self.port = free_port()
        self.refused = 0
        self.seen_auth: list[str] = []
        app = FastAPI()

        @app.middleware("http")
        async def wants_the_key(request: Request, call_next):
            auth = request.headers.get("authorization", "")
            self.seen_auth.append(auth)
            if auth != f"Bearer {self.key}":
                self.refused += 1
                return JSONResponse({"error": {"message": "Incorrect API key provided",
                                               "type": "invalid_request_error",
                                               "code": "invalid_api_key"}}, status_code=401)
            return await call_next(request)

        @app.get("/v1/models")
        async def models() -> dict:
            return {"object": "list", "data": [{"id": "cloud", "object": "model"}]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            await request.json()
            return StreamingResponse(iter(_chunks(ANSWER, True)), media_type="text/event-stream")

        @app.post("/v1/completions")
        async def completions(request: Request):
            await request.json()
            return StreamingResponse(iter(_chunks(ANSWER, False)), media_type="text/event-stream")

        ssl = {"ssl_certfile": str(cert[0]), "ssl_keyfile": str(cert[1])} if cert else {}
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="error", **ssl))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"{'https' if self.cert else 'http'}://127.0.0.1:{self.port}/v1#cloud"

    def __enter__(self) -> "KeyedCloud":
        self.thread.start()
        wait_until("keyed cloud up", lambda: self.server.started, 20)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)
