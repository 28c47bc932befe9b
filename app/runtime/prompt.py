"""The reply prompt of the walking skeleton: the persona, then the channel's recent history.

(The layered context pipeline with lorebook, memory and budgets replaces this module's internals;
its input and output stay the same.)
"""

from __future__ import annotations

from collections.abc import Sequence

from app.memory.records import Turn
from app.runtime.llm import ChatMessage

SELF_KEY = "familiar:self"


def describe_place(place: str) -> str:
    if place == "local":
        return "the owner's private test chat in the Familiar window"
    if place.startswith("dm:"):
        return "a direct message conversation"
    return "a channel of a Discord server"


def build_reply_prompt(persona: str, display_name: str, place: str, history: Sequence[Turn]) -> list[ChatMessage]:
    """System prompt (persona + situation) followed by the recent turns, oldest first.

    Other people's turns are user messages prefixed with their display name, so the model can tell
    speakers apart; the familiar's own turns are assistant messages.
    """
    system = (
        f"{persona.strip()}\n\n"
        f"You are {display_name}. You are talking in {describe_place(place)}. "
        "Each user message starts with the speaker's name. Reply with your message only, without a name prefix."
    )
    messages: list[ChatMessage] = [{"role": "system", "content": system}]
    for turn in history:
        if turn.author_key == SELF_KEY:
            messages.append({"role": "assistant", "content": turn.content})
        else:
            messages.append({"role": "user", "content": f"{turn.author_name}: {turn.content}"})
    return messages
