"""The client for any OpenAI-compatible chat-completions endpoint.

OpenAI, OpenRouter, Ollama, LM Studio, llama.cpp and vLLM all speak the same
`POST {base_url}/chat/completions` protocol; this module talks to them through the official
`openai` async client with its own retries (exponential backoff with jitter on timeouts,
connection errors, 429 and 5xx), a concurrency cap counted per place (place_slots.py: a stalled
request in one channel never holds up another's) and one-line, user-actionable errors.

Runtime layer: no Qt, qasync or discord imports here.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import random
import re
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict, cast
from urllib.parse import unquote

from app.config.redaction import redact_urls, split_userinfo, url_secrets
from app.config.settings import LLMSection, Secrets
from app.runtime.errors import LLMError
from app.runtime.hints import (
    LLM_API_KEY,
    LLM_BASE_URL,
    LLM_MAX_CONCURRENCY,
    LLM_MAX_TOKENS,
    LLM_MODEL,
    LLM_TIMEOUT,
    MISSING,
    Advice,
    Hint,
)
from app.runtime.place_slots import PlaceSlots

if TYPE_CHECKING:  # the openai package loads on the first request (importing it takes about half a second)
    import openai
    from openai.types.chat import ChatCompletionMessageParam

__all__ = ["ChatMessage", "LLMClient", "LLMEndpoint", "LLMError", "load_client_library", "strip_reasoning"]

_MAX_BACKOFF = 30.0
_MAX_RETRY_AFTER = 30.0
_DETAIL_LIMIT = 200
MODEL_LIST_TIMEOUT = 15.0


async def load_client_library() -> None:
    """Import the `openai` package on a worker thread, once (about half a second of work that holds the
    interpreter lock in bursts): started with the memory workers, so their first request does not do it in
    the middle of what the owner is doing in the window."""
    if "openai" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "openai")


class ChatMessage(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class LLMEndpoint:
    """Everything needed to reach one OpenAI-compatible endpoint and ask it for completions."""

    base_url: str
    api_key: str = field(repr=False)
    model: str
    timeout: float
    max_retries: int
    max_concurrency: int
    temperature: float
    max_tokens: int

    @classmethod
    def for_replies(cls, llm: LLMSection, secrets: Secrets) -> LLMEndpoint:
        """The endpoint the familiar answers chat messages with."""
        return cls(
            base_url=llm.base_url.strip(),
            api_key=secrets.llm_api_key.strip(),
            model=llm.model.strip(),
            timeout=llm.timeout,
            max_retries=llm.max_retries,
            max_concurrency=llm.max_concurrency,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
        )

    @classmethod
    def for_background(cls, llm: LLMSection, secrets: Secrets) -> LLMEndpoint:
        """The endpoint for background memory work: [llm.background] and the background API key
        override the reply endpoint's when not blank."""
        base_url = llm.background.base_url.strip() or llm.base_url.strip()
        model = llm.background.model.strip() or llm.model.strip()
        return cls(
            base_url=base_url,
            api_key=secrets.llm_background_api_key.strip() or secrets.llm_api_key.strip(),
            model=model,
            timeout=llm.timeout,
            max_retries=llm.max_retries,
            max_concurrency=llm.max_concurrency,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
        )

    @property
    def shown_url(self) -> str:
        """The address as every message names it: without its user:password (app.config.redaction)."""
        return redact_urls(self.base_url.strip())

    def secrets(self) -> tuple[str, ...]:
        """What no text may carry: the API key, and the password of the address."""
        return tuple(s for s in (self.api_key, *url_secrets(self.base_url.strip())) if s)

    def missing(self) -> tuple[str, ...]:
        """Names of the settings that must be filled in before this endpoint can be used."""
        out: list[str] = []
        if not self.base_url.strip():
            out.append("LLM endpoint")
        if not self.model.strip():
            out.append("LLM model")
        return tuple(out)


_THINK_BLOCKS = re.compile(r"\A\s*(?:<think(?:ing)?>.*?</think(?:ing)?>\s*)+", re.DOTALL | re.IGNORECASE)
_UNCLOSED_THINK = re.compile(r"\A\s*<think(?:ing)?>", re.IGNORECASE)
_BARE_THINK_END = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_HAS_THINK_START = re.compile(r"<think(?:ing)?>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """Remove leading <think>...</think> reasoning blocks and surrounding whitespace.

    Also handles the two malformed shapes local models produce: an opening <think> that never
    closes (the answer was cut off while reasoning: nothing is left) and a bare leading
    "...</think>" whose opening tag the chat template already put into the prompt.
    """
    blocks = _THINK_BLOCKS.match(text)
    if blocks is not None:
        text = text[blocks.end() :]
    if _UNCLOSED_THINK.match(text):
        return ""
    if blocks is None:
        end = _BARE_THINK_END.search(text)
        if end is not None and _HAS_THINK_START.search(text, 0, end.start()) is None:
            text = text[end.end() :]
    return text.strip()


def _one_line(text: str, limit: int = _DETAIL_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _error_detail(exc: openai.APIStatusError) -> str:
    """The server's own error message, on one line, or '' when it gave none."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, dict):
            message = message.get("message")
        if isinstance(message, str):
            return _one_line(message)
        return ""
    if isinstance(body, str):
        return _one_line(body)
    return ""


def _connection_reason(exc: BaseException) -> str:
    """A few words on why a connection failed, from the exception chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, socket.gaierror):
            return "host not found"
        if isinstance(current, ConnectionResetError):
            return "connection reset"
        text = str(current).lower()
        if "refused" in text:
            return "connection refused"
        if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
            return "host not found"
        if "certificate" in text or "ssl" in text:
            return "TLS error: " + _one_line(str(current), 120)
        current = current.__cause__ or current.__context__
    detail = _one_line(str(exc.__cause__ or exc), 120)
    return detail or "connection failed"


class _RetryableError(Exception):
    """One failed attempt that may succeed when tried again."""

    def __init__(
        self,
        kind: Literal["timeout", "connection", "status"],
        *,
        status: int = 0,
        detail: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class _Answer:
    content: str
    finish_reason: str


def _to_openai(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    out: list[ChatCompletionMessageParam] = []
    for message in messages:
        role = message["role"]
        if role not in ("system", "user", "assistant"):  # pragma: no cover - guarded by the type
            raise ValueError(f"unknown chat role {role!r}")
        out.append(cast("ChatCompletionMessageParam", {"role": role, "content": message["content"]}))
    return out


def _client(endpoint: LLMEndpoint, timeout: float) -> openai.AsyncOpenAI:
    """The openai client for `endpoint`. A user:password in its address (a proxy that wants one) is sent
    as the Basic authorization header the HTTP client would have made of it, and the address the client
    requests (and its request log lines name) is the one without: no request line carries the password."""
    import openai  # loaded by the caller already

    url, user, password = split_userinfo(endpoint.base_url.strip())
    headers: dict[str, str] | None = None
    if user is not None or password is not None:
        pair = f"{unquote(user or '')}:{unquote(password or '')}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}
    return openai.AsyncOpenAI(
        base_url=url,
        api_key=endpoint.api_key or "not-needed",
        timeout=timeout,
        max_retries=0,
        default_headers=headers,
    )


def _retry_after(exc: openai.APIStatusError) -> float | None:
    raw = exc.response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


class LLMClient:
    """Asks one OpenAI-compatible endpoint for chat completions."""

    def __init__(self, endpoint: LLMEndpoint, *, retry_base_delay: float = 0.5) -> None:
        self._endpoint = endpoint
        self._retry_base_delay = retry_base_delay
        self._slots = PlaceSlots(max(1, endpoint.max_concurrency))
        self._client: openai.AsyncOpenAI | None = None
        self._closed = False
        self._retired = False
        self._in_flight = 0

    @property
    def endpoint(self) -> LLMEndpoint:
        return self._endpoint

    @property
    def _url(self) -> str:
        """The address as messages name it (no user:password); requests go to the endpoint's own."""
        return self._endpoint.shown_url

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        place: str = "",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        """The model's answer to `messages`, stripped of whitespace and leading reasoning blocks.

        `place` is where the answer is for (a reply's channel, DM or the local chat): at most
        `max_concurrency` requests of one place are in flight at once, and a place never waits for
        another's. Requests that name no place share one pool of that size.

        Raises LLMError (one line, naming the endpoint) when no usable answer came back.
        """
        answer = await self._request(messages, place=place, max_tokens=max_tokens, temperature=temperature)
        text = strip_reasoning(answer.content)
        if not text:
            if answer.finish_reason == "length":
                raise LLMError(
                    Advice(
                        f"The LLM endpoint {self._url} returned an empty answer (it was cut off at the token limit).",
                        Hint("raise {}", (LLM_MAX_TOKENS,)),
                    )
                )
            raise LLMError(f"The LLM endpoint {self._url} returned an empty answer.")
        return text

    async def check(self) -> str:
        """Send a tiny prompt and return a one-line success message; raises LLMError otherwise."""
        started = time.perf_counter()
        await self._request([ChatMessage(role="user", content="ping")], place="", max_tokens=5, temperature=0.0)
        elapsed_ms = round((time.perf_counter() - started) * 1000)
        return f"OK: model '{self._endpoint.model}' at {self._url} answered in {elapsed_ms} ms"

    async def aclose(self) -> None:
        """Close the HTTP connections. Later calls raise LLMError."""
        self._closed = True
        await self._close_connections()

    async def retire(self) -> None:
        """This client was replaced by one with new settings: its connections close as soon as no
        request is in flight (now, if none is). A request already under way, or one a worker's tick
        in progress still makes, finishes on it; it never fails for the swap."""
        self._retired = True
        if not self._in_flight:
            await self._close_connections()

    async def _close_connections(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    # -- internals ---------------------------------------------------------------------------

    def _openai(self) -> openai.AsyncOpenAI:
        if self._closed:
            raise LLMError("The LLM connection is closed; restart the familiar to use it again.")
        missing = self._endpoint.missing()
        if missing:
            raise LLMError(Advice("", Hint("set {} first", tuple(MISSING[name] for name in missing))))
        if not self._url.lower().startswith(("http://", "https://")):
            raise LLMError(
                f"The LLM endpoint '{self._url}' is not a web address. "
                "It must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)."
            )
        if self._client is None:
            self._client = _client(self._endpoint, self._endpoint.timeout)
        return self._client

    async def _request(
        self,
        messages: Sequence[ChatMessage],
        *,
        place: str,
        max_tokens: int | None,
        temperature: float | None,
    ) -> _Answer:
        if "openai" not in sys.modules:  # the first request: load the package on a worker thread, not the loop's
            await asyncio.to_thread(importlib.import_module, "openai")
        client = self._openai()
        payload = _to_openai(messages)
        tokens = self._endpoint.max_tokens if max_tokens is None else max_tokens
        temp = self._endpoint.temperature if temperature is None else temperature
        attempts = max(0, self._endpoint.max_retries) + 1
        self._in_flight += 1
        try:
            for attempt in range(attempts):
                try:
                    async with self._slots.hold(place):
                        return await self._attempt(client, payload, tokens, temp)
                except _RetryableError as failure:
                    if attempt + 1 >= attempts:
                        raise self._exhausted(failure, attempts) from None
                    await asyncio.sleep(self._backoff(attempt, failure.retry_after))
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            self._in_flight -= 1
            if self._retired and not self._in_flight and self._client is client:
                await self._close_connections()

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = min(_MAX_BACKOFF, self._retry_base_delay * (2.0**attempt))
        delay = delay * (0.5 + random.random())  # jitter: 50% to 150% of the nominal delay
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    async def _attempt(
        self,
        client: openai.AsyncOpenAI,
        payload: list[ChatCompletionMessageParam],
        max_tokens: int,
        temperature: float,
    ) -> _Answer:
        import openai  # loaded by _openai() already

        url = self._url
        try:
            # The openai timeout bounds each phase; this one bounds the whole attempt.
            async with asyncio.timeout(self._endpoint.timeout):
                completion: object = await client.chat.completions.create(
                    model=self._endpoint.model,
                    messages=payload,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    stream=False,
                )
        except TimeoutError:
            raise _RetryableError("timeout") from None
        except openai.APITimeoutError:
            raise _RetryableError("timeout") from None
        except openai.APIConnectionError as exc:
            raise _RetryableError("connection", detail=_connection_reason(exc)) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._not_openai() from None
        except openai.APIResponseValidationError:
            raise self._not_openai() from None
        except openai.OpenAIError as exc:
            raise LLMError(f"The LLM endpoint {url} failed: {_one_line(str(exc))}") from None
        return self._parse(completion)

    def _not_openai(self) -> LLMError:
        return LLMError(
            f"The LLM endpoint {self._url} sent an answer that is not an OpenAI-style chat completion. "
            "Check that the URL is an OpenAI-compatible API (it usually ends in /v1)."
        )

    def _parse(self, completion: object) -> _Answer:
        from openai.types.chat import ChatCompletion  # loaded by _openai() already

        if not isinstance(completion, ChatCompletion):
            raise self._not_openai()
        try:
            if "choices" not in completion.model_fields_set:
                raise self._not_openai()
            choices = completion.choices
            if not choices:
                raise LLMError(f"The LLM endpoint {self._url} returned an empty answer (no choices).")
            choice = choices[0]
            # Loosely typed on purpose: a non-conforming server can put anything here.
            content: object = choice.message.content
            reason: object = choice.finish_reason
            finish_reason = str(reason or "")
        except (AttributeError, IndexError, TypeError):
            raise self._not_openai() from None
        if content is not None and not isinstance(content, str):
            raise self._not_openai()
        return _Answer(content=content or "", finish_reason=finish_reason)

    def _status_error(self, exc: openai.APIStatusError) -> Exception:
        """A retryable failure for 408/429/5xx, else the final LLMError."""
        url = self._url
        status = exc.status_code
        detail = _error_detail(exc)
        if status in (408, 429) or status >= 500:
            return _RetryableError("status", status=status, detail=detail, retry_after=_retry_after(exc))
        said = f" The server said: {detail}" if detail else ""
        if status == 401:
            return LLMError(
                Advice(
                    f"The LLM endpoint {url} rejected the API key (401).", Hint("check {}", (LLM_API_KEY,), "the key")
                )
            )
        if status == 403:
            return LLMError(
                Advice(
                    f"The LLM endpoint {url} refused access (403).",
                    Hint("check {}", (LLM_API_KEY,), "the API key and its permissions"),
                    said,
                )
            )
        if status == 404:
            if "model" in detail.lower():
                return LLMError(
                    Advice(
                        f"The LLM endpoint {url} has no model '{self._endpoint.model}' (404).",
                        Hint("check {}", (LLM_MODEL,), "the model name"),
                    )
                )
            return LLMError(
                Advice(
                    f"The LLM endpoint {url} has no chat completions API (404).",
                    Hint("check {} (it usually ends in /v1)", (LLM_BASE_URL,), "the URL"),
                )
            )
        if status in (400, 422):
            return LLMError(f"The LLM endpoint {url} refused the request ({status}).{said}")
        return LLMError(f"The LLM endpoint {url} answered with an error {status}.{said}")

    def _exhausted(self, failure: _RetryableError, attempts: int) -> LLMError:
        url = self._url
        tries = _plural(attempts, "attempt")
        if failure.kind == "timeout":
            return LLMError(
                Advice(
                    f"The LLM endpoint {url} did not answer within {self._endpoint.timeout:g} s ({tries}). "
                    "Is the model loaded?",
                    Hint("raise {} if it is just slow", (LLM_TIMEOUT,)),
                )
            )
        if failure.kind == "connection":
            problem = f"Cannot reach the LLM endpoint {url} ({failure.detail})."
            if failure.detail == "host not found":
                return LLMError(Advice(problem, Hint("check {}", (LLM_BASE_URL,), "the address")))
            if failure.detail.startswith("TLS error"):
                versus = Hint(
                    "check https:// versus http:// {}", (LLM_BASE_URL,), "", "check https:// versus http:// in {}"
                )
                return LLMError(Advice(problem, versus))
            return LLMError(f"{problem} Is the server running?")
        said = f" The server said: {failure.detail}" if failure.detail else ""
        if failure.status == 429:
            return LLMError(
                Advice(
                    f"The LLM endpoint {url} is rate limiting requests (429) after {tries}. Wait a moment or",
                    Hint("lower {}", (LLM_MAX_CONCURRENCY,)),
                    said,
                )
            )
        if failure.status == 408:
            return LLMError(f"The LLM endpoint {url} timed out the request (408) after {tries}. Is the model loaded?")
        return LLMError(f"The LLM endpoint {url} answered with an error {failure.status} after {tries}.{said}")

    async def list_models(self, *, timeout: float = MODEL_LIST_TIMEOUT) -> tuple[str, ...]:
        """The ids of the models the endpoint serves (`GET {base_url}/models`), sorted, without retries;
        no model needs to be set. Raises LLMError (one line, naming the endpoint)."""
        url = self._url
        if not url:
            raise LLMError("Set the LLM endpoint first.")
        if not url.lower().startswith(("http://", "https://")):
            raise LLMError(
                f"The LLM endpoint '{url}' is not a web address. "
                "It must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)."
            )
        if "openai" not in sys.modules:  # loaded on a worker thread, not the loop's (see the imports)
            await asyncio.to_thread(importlib.import_module, "openai")
        import openai

        client = _client(self._endpoint, timeout)
        try:
            async with asyncio.timeout(timeout):
                return tuple(sorted({model.id async for model in client.models.list()}, key=str.lower))
        except (TimeoutError, openai.APITimeoutError):
            raise LLMError(f"The LLM endpoint {url} did not list its models within {timeout:g} s.") from None
        except openai.APIConnectionError as exc:
            reason = _connection_reason(exc)
            hint = "Check the address." if reason == "host not found" else "Is the server running?"
            raise LLMError(f"Cannot reach the LLM endpoint {url} ({reason}). {hint}") from None
        except openai.APIStatusError as exc:
            raise self._model_list_error(exc) from None
        except (json.JSONDecodeError, UnicodeDecodeError, openai.APIResponseValidationError, TypeError, AttributeError):
            # A body that is not a JSON page (an HTML page, a bare string) breaks inside the openai client.
            raise LLMError(
                f"The LLM endpoint {url} sent a model list that is not OpenAI-style. "
                "Check that the URL is an OpenAI-compatible API (it usually ends in /v1)."
            ) from None
        except openai.OpenAIError as exc:
            raise LLMError(f"The LLM endpoint {url} could not list its models: {_one_line(str(exc))}") from None
        finally:
            await client.close()

    def _model_list_error(self, exc: openai.APIStatusError) -> LLMError:
        url = self._url
        detail = _error_detail(exc)
        said = f" The server said: {detail}" if detail else ""
        if exc.status_code == 401:
            return LLMError(f"The LLM endpoint {url} rejected the API key (401). Check the key.")
        if exc.status_code == 403:
            return LLMError(f"The LLM endpoint {url} refused access (403). Check the API key.{said}")
        if exc.status_code == 404:
            return LLMError(
                f"The LLM endpoint {url} has no model list (404). Check the URL (it usually ends in /v1),"
                " or type the model name."
            )
        return LLMError(f"The LLM endpoint {url} answered with an error {exc.status_code}.{said}")
