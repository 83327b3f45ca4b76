"""HEAD on every GET route (RFC 9110 §9.3.2: a server that supports GET supports HEAD): the
request runs as the GET it stands for, and its answer goes out with the GET's status and
headers (Content-Length included) and no body. Uptime checkers probe `/health` this way.

A HEAD on a path that takes no GET is refused as the GET would be (405, naming HEAD). Pure
ASGI, in front of the app's routes, behind serve/http/middleware.py's request id."""

from __future__ import annotations


class HeadAsGet:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            return await self.app(scope, receive, send)
        scope = dict(scope, method="GET")
        scope.setdefault("state", {})["head"] = True

        async def without_body(message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the rest of a body nobody reads
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(scope, receive, without_body)
