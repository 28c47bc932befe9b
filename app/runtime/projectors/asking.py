"""Asking the background model for a structured answer: one retry on garbage, then give up."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from app.runtime.llm import ChatMessage, LLMClient

_log = logging.getLogger(__name__)
T = TypeVar("T")


MAX_ANSWER = 32_000


def one_key_object(raw: str, key: str, error: type[Exception]) -> list[Any]:
    """The list under `key` of an answer that must be exactly {"<key>": [...]} (optionally inside one
    ```json fence); anything else raises `error` saying what is wrong."""
    if len(raw) > MAX_ANSWER:
        raise error("the answer is too long")
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or set(data) != {key} or not isinstance(data[key], list):
        raise error(f'expected {{"{key}": [...]}}')
    return list(data[key])


class GarbageAnswerError(Exception):
    """The model's answer could not be used, even after one retry; the message says why."""


async def ask_parsed(
    llm: LLMClient,
    system: str,
    user: str,
    parse: Callable[[str], T],
    *,
    errors: tuple[type[Exception], ...],
    max_tokens: int = 1200,
) -> T:
    """Ask, parse; on a parse error ask once more, quoting the error; then raise GarbageAnswerError.

    LLMError (endpoint down, timeouts) propagates unchanged: that is not garbage, the work is
    simply not done yet and stays behind its watermark.
    """
    messages: list[ChatMessage] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    answer = await llm.complete(messages, max_tokens=max_tokens, temperature=0.0)
    try:
        return parse(answer)
    except errors as first:
        _log.info("background answer rejected (%s); asking once more", first)
        retry: list[ChatMessage] = [
            *messages,
            {"role": "assistant", "content": answer[:4000]},
            {
                "role": "user",
                "content": f"That answer was invalid: {first}. Answer again, following the format exactly.",
            },
        ]
        second = await llm.complete(retry, max_tokens=max_tokens, temperature=0.0)
        try:
            return parse(second)
        except errors as again:
            raise GarbageAnswerError(f"{again} (after one retry)") from again
