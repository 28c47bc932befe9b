"""A real HTTP fake of an OpenAI-compatible chat-completions server, for tests.

It listens on 127.0.0.1 on a random port and speaks enough of the OpenAI wire format for the
official `openai` client: POST /v1/chat/completions (non-streaming) and GET /v1/models. Tests
script its behaviour (answers, HTTP errors, delays, garbage bodies, hangs, stalls of the prompts that
say a given text) and inspect what it received.

    fake = FakeLLM(api_key="sk-test", models=("tiny",))
    await fake.start()
    fake.script(ScriptedReply(status=500), "hello")   # first a 500, then an answer
    ...
    await fake.close()
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web

__all__ = ["FakeLLM", "RecordedRequest", "ScriptedReply", "echo_reply"]


@dataclass
class ScriptedReply:
    """One scripted behaviour of the fake for one chat-completion request.

    content: the assistant message content (None sends a JSON null).
    status: HTTP status; anything but 200 sends an OpenAI-style {"error": {...}} body.
    delay: seconds to wait before answering (does not block the server).
    body: raw response body that replaces everything else (e.g. garbage, not JSON).
    content_type: Content-Type of the response.
    hang: never answer until the fake is closed.
    finish_reason: choices[0].finish_reason.
    error_message: the error message of a non-200 answer.
    """

    content: str | None = "Hello from the fake LLM."
    status: int = 200
    delay: float = 0.0
    body: str | None = None
    content_type: str = "application/json"
    hang: bool = False
    finish_reason: str = "stop"
    error_message: str | None = None


@dataclass
class RecordedRequest:
    """What one chat-completion request carried."""

    messages: list[dict[str, Any]]
    model: str | None
    max_tokens: int | None
    temperature: float | None
    headers: dict[str, str]
    received_at: float
    body: dict[str, Any] = field(default_factory=dict)


def echo_reply(messages: list[dict[str, Any]]) -> str:
    """The default answer: echoes the last user message deterministically."""
    last_user = ""
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            last_user = content if isinstance(content, str) else json.dumps(content)
    return f"echo: {last_user}"


def _error_body(message: str, error_type: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


_ERROR_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"),
    408: ("timeout_error", None),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


class FakeLLM:
    """A fake OpenAI-compatible server on 127.0.0.1 with scripted behaviour.

    api_key: when set, every request must carry "Authorization: Bearer <api_key>" (else 401).
    basic_auth: (user, password): every request must carry them as "Authorization: Basic ..." (else 401),
    as a proxy that wants `http://user:password@host/v1` does (HTTP clients send the address's user and
    password that way).
    models: when set, a chat request for any other model gets an OpenAI-style 404; GET /v1/models lists
    them (else one, "fake-model").
    models_status / models_body: script GET /v1/models (an error status, or a raw body such as garbage);
    `model_list_requests` records the headers of each one.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] | None = None,
        basic_auth: tuple[str, str] | None = None,
    ) -> None:
        self.api_key = api_key
        self.basic_auth = basic_auth
        self.models = models
        self.default_reply: Callable[[list[dict[str, Any]]], str] = echo_reply
        self.requests: list[RecordedRequest] = []
        self.model_list_requests: list[dict[str, str]] = []
        self.models_status: int | None = None
        self.models_body: str | None = None
        self.unhandled: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.stalled = 0  # chat requests held by `stall()` right now
        self._script: deque[ScriptedReply] = deque()
        self._stall_on: list[str] = []
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._closing = asyncio.Event()
        self._received = asyncio.Condition()
        self._created = int(time.time())
        self._counter = 0

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("FakeLLM already started")
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._list_models)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def close(self) -> None:
        """Stop the server; hanging or delayed requests are released first."""
        self._closing.set()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeLLM not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------

    def script(self, *replies: ScriptedReply | str) -> None:
        """Queue behaviours, consumed one per chat request in order; then default_reply answers."""
        for reply in replies:
            self._script.append(ScriptedReply(content=reply) if isinstance(reply, str) else reply)

    def hang_next(self) -> None:
        """The next chat request never gets an answer (until close)."""
        self._script.appendleft(ScriptedReply(hang=True))

    def stall(self, containing: str) -> None:
        """From now on, every chat request whose last message contains `containing` (a reply's: the
        message it answers) is accepted and never answered until the fake closes, whatever is
        scripted; the others are answered as usual, at the same time. A request held so does not
        take a scripted reply."""
        self._stall_on.append(containing)

    async def wait_for_stalled(self, n: int, timeout: float = 5.0) -> None:  # noqa: ASYNC109, RUF100
        """Wait until at least n chat requests are held by `stall()` at once."""
        try:
            async with asyncio.timeout(timeout):
                async with self._received:
                    await self._received.wait_for(lambda: self.stalled >= n)
        except TimeoutError:
            raise AssertionError(
                f"FakeLLM holds {self.stalled} stalled request(s) after {timeout} s, expected {n}"
            ) from None

    async def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:  # noqa: ASYNC109, RUF100
        """Wait until at least n chat requests arrived; return all recorded so far."""
        try:
            async with asyncio.timeout(timeout):
                async with self._received:
                    await self._received.wait_for(lambda: len(self.requests) >= n)
        except TimeoutError:
            raise AssertionError(
                f"FakeLLM got {len(self.requests)} chat request(s) within {timeout} s, expected {n}"
            ) from None
        return list(self.requests)

    # -- handlers ----------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        given = request.headers.get("Authorization")
        if self.basic_auth is not None:
            pair = ":".join(self.basic_auth).encode()
            return given == "Basic " + base64.b64encode(pair).decode("ascii")
        return self.api_key is None or given == f"Bearer {self.api_key}"

    @staticmethod
    def _unauthorized() -> web.Response:
        return web.json_response(
            _error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"), status=401
        )

    async def _unknown(self, request: web.Request) -> web.Response:
        self.unhandled.append(f"{request.method} {request.path}")
        return web.json_response(
            _error_body(f"Unknown route {request.method} {request.path}", "invalid_request_error", None),
            status=404,
        )

    async def _list_models(self, request: web.Request) -> web.Response:
        self.model_list_requests.append(dict(request.headers))
        if not self._authorized(request):
            return self._unauthorized()
        if self.models_body is not None:
            return web.Response(status=self.models_status or 200, text=self.models_body, content_type="text/html")
        if self.models_status is not None:
            error_type, code = _ERROR_TYPES.get(self.models_status, ("server_error", None))
            body = _error_body(f"Scripted error {self.models_status}.", error_type, code)
            return web.json_response(body, status=self.models_status)
        names = self.models if self.models is not None else ("fake-model",)
        data = [{"id": name, "object": "model", "created": self._created, "owned_by": "fake"} for name in names]
        return web.json_response({"object": "list", "data": data})

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        received_at = time.perf_counter()
        try:
            payload = await request.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            return web.json_response(
                _error_body("Request body is not a JSON object.", "invalid_request_error", None), status=400
            )
        messages = payload.get("messages")
        model = payload.get("model")
        max_tokens = payload.get("max_tokens", payload.get("max_completion_tokens"))
        temperature = payload.get("temperature")
        recorded = RecordedRequest(
            messages=list(messages) if isinstance(messages, list) else [],
            model=model if isinstance(model, str) else None,
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            temperature=float(temperature) if isinstance(temperature, int | float) else None,
            headers=dict(request.headers),
            received_at=received_at,
            body=payload,
        )
        async with self._received:
            self.requests.append(recorded)
            self._received.notify_all()

        if not self._authorized(request):
            return self._unauthorized()
        if self.models is not None and recorded.model not in self.models:
            return web.json_response(
                _error_body(
                    f"The model '{recorded.model}' does not exist or you do not have access to it.",
                    "invalid_request_error",
                    "model_not_found",
                    "model",
                ),
                status=404,
            )

        if self._stalls(recorded.messages):
            return await self._hold()
        reply = self._script.popleft() if self._script else ScriptedReply(content=self.default_reply(recorded.messages))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if reply.hang:
                await self._closing.wait()
                return web.Response(status=503, text="fake closed")
            if reply.delay > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(reply.delay):
                        await self._closing.wait()
            return self._render(reply, recorded)
        finally:
            self.in_flight -= 1

    def _stalls(self, messages: list[dict[str, Any]]) -> bool:
        last = messages[-1].get("content") if messages else None
        return isinstance(last, str) and any(needle in last for needle in self._stall_on)

    async def _hold(self) -> web.Response:
        """A stalled request: accepted, counted, and answered only when the fake closes."""
        async with self._received:
            self.stalled += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._received.notify_all()
        try:
            await self._closing.wait()
            return web.Response(status=503, text="fake closed")
        finally:
            self.stalled -= 1
            self.in_flight -= 1

    def _render(self, reply: ScriptedReply, recorded: RecordedRequest) -> web.Response:
        if reply.body is not None:
            return web.Response(status=reply.status, text=reply.body, content_type=reply.content_type)
        if reply.status != 200:
            error_type, code = _ERROR_TYPES.get(reply.status, ("server_error", None))
            message = reply.error_message or f"Scripted error {reply.status}."
            return web.Response(
                status=reply.status,
                text=json.dumps(_error_body(message, error_type, code)),
                content_type=reply.content_type,
            )
        self._counter += 1
        content = reply.content
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in recorded.messages)
        completion_tokens = len(content.split()) if content else 0
        body = {
            "id": f"chatcmpl-fake{self._counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": recorded.model or "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return web.Response(status=200, text=json.dumps(body), content_type=reply.content_type)
