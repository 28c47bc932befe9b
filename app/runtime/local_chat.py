"""The window's local chat: the owner talks to the familiar without Discord (to try lore and persona
before going live). Its turns are stored like any other place's, in the place "local"."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from app.memory.explanations import Explanations
from app.memory.history import History
from app.memory.records import OWNER_KEY, SELF_KEY, NewTurn, Turn
from app.runtime.errors import FamiliarError
from app.runtime.facade import ChatLine
from app.runtime.names import LOCAL_PLACE
from app.runtime.replies import Replies

MAX_LOCAL_CHARS = 8000


class LocalChat:
    def __init__(
        self,
        history: History,
        replies: Replies,
        explanations: Explanations,
        *,
        display_name: Callable[[], str],
        missing: Callable[[], tuple[str, ...]],
    ) -> None:
        """`display_name` and `missing` (what the reply endpoint still lacks) follow the settings."""
        self._history = history
        self._replies = replies
        self._explanations = explanations
        self._display_name = display_name
        self._missing = missing

    async def send(self, text: str) -> ChatLine:
        """The owner says `text`; returns the familiar's reply line."""
        text = text.strip()
        if not text:
            raise FamiliarError("Type a message first.")
        if len(text) > MAX_LOCAL_CHARS:
            raise FamiliarError(f"That message is too long ({len(text)} characters, at most {MAX_LOCAL_CHARS}).")
        missing = self._missing()
        if missing:
            raise FamiliarError(f"No {' and no '.join(missing)} yet: set them in Settings.")
        said = await self._append(OWNER_KEY, "You", text)
        reply, explanation_id = await self._replies.answer(LOCAL_PLACE, said)
        turn = await self._append(SELF_KEY, self._display_name(), reply)
        await self._explanations.link(explanation_id, [turn.id])
        return chat_line(turn)

    async def recent(self, limit: int = 50) -> list[ChatLine]:
        return [chat_line(t) for t in await self._history.recent_turns(LOCAL_PLACE, limit)]

    async def _append(self, author_key: str, author_name: str, content: str) -> Turn:
        turn = await self._history.append_turn(
            NewTurn(
                platform="local",
                place=LOCAL_PLACE,
                channel_id=0,
                author_key=author_key,
                author_name=author_name,
                content=content,
                created_at=datetime.now(UTC),
            )
        )
        if turn is None:  # pragma: no cover - local turns carry no message id, so they are never skipped
            raise FamiliarError("the local chat could not be saved")
        return turn


def chat_line(turn: Turn) -> ChatLine:
    return ChatLine(
        turn_id=turn.id,
        author=turn.author_name,
        content=turn.content,
        from_familiar=turn.author_key == SELF_KEY,
        created_at=turn.created_at,
    )
