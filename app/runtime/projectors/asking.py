"""Asking the background model for a structured answer: one retry on garbage, then give up."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from app.runtime.llm import ChatMessage, LLMClient

_log = logging.getLogger(__name__)
T = TypeVar("T")


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
