"""The window's local chat: the owner talks to the familiar without Discord (to try lore and persona
before going live). Its turns are stored like any other place's, in the place "local".

An empty chat opens with the familiar's greeting, as SillyTavern opens a chat with a card's first message
(or one of its alternate greetings, picked before the owner's first message); the one picked is stored,
as the familiar's first turn (mode "greeting"), when the owner's first message is. The last reply can be
regenerated (a new revision of its turn: turns are never updated in place) and a reply that failed retried.
Clearing starts the chat afresh without deleting anything (app.memory.conversations), and can be undone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from app.lore.macros import expand
from app.memory.conversations import ConversationStarts, Restart
from app.memory.errors import StoreError
from app.memory.explanations import Explanations
from app.memory.history import History
from app.memory.records import OWNER_KEY, SELF_KEY, NewTurn, Turn
from app.runtime.api.facade import ChatCleared, ChatLine
from app.runtime.errors import FamiliarError, ReplyFailedError
from app.runtime.hints import missing_setup
from app.runtime.names import LOCAL_PLACE
from app.runtime.replies import Replies

MAX_LOCAL_CHARS = 8000
OWNER_NAME = "You"  # the owner's name in the local chat (and what {{user}} becomes in its greetings)
GREETING_MODE = "greeting"  # the mode of the stored greeting's turn


class LocalChat:
    def __init__(
        self,
        history: History,
        replies: Replies,
        explanations: Explanations,
        *,
        display_name: Callable[[], str],
        missing: Callable[[], tuple[str, ...]],
        greeting: Callable[[], str] = lambda: "",
        folder: Path | None = None,
    ) -> None:
        """`display_name`, `missing` (what the reply endpoint still lacks) and `greeting` follow the settings;
        `folder` is the familiar's, where card.json keeps a card's alternate greetings."""
        self._history = history
        self._replies = replies
        self._explanations = explanations
        self._display_name = display_name
        self._missing = missing
        self._greeting = greeting
        self._folder = folder
        self._starts = ConversationStarts(history.store)

    async def send(self, text: str, *, greeting: str | None = None) -> ChatLine:
        """The owner says `text` (the chat opening with `greeting` when it is empty); returns the reply line."""
        text = text.strip()
        if not text:
            raise FamiliarError("Type a message first.")
        if len(text) > MAX_LOCAL_CHARS:
            raise FamiliarError(f"That message is too long ({len(text)} characters, at most {MAX_LOCAL_CHARS}).")
        self._check_endpoint()
        opening = (greeting or "").strip()
        if opening and await self._history.recent_turns(LOCAL_PLACE, 1):
            opening = ""  # the chat has begun: a greeting opens an empty one only
        now = datetime.now(UTC)
        new = [_new_turn(OWNER_KEY, OWNER_NAME, text, now)]
        if opening:
            new.insert(0, _new_turn(SELF_KEY, self._display_name(), opening, now, mode=GREETING_MODE))
        stored = await self._store(new)  # the greeting and the message together, or neither
        said = stored[-1]
        greeted = chat_line(stored[0]) if opening else None
        try:
            return await self._answer(said)
        except FamiliarError as exc:
            raise ReplyFailedError(str(exc), said=chat_line(said), greeting=greeted) from exc

    async def recent(self, limit: int = 50) -> list[ChatLine]:
        return [chat_line(t) for t in await self._history.recent_turns(LOCAL_PLACE, limit)]

    async def greetings(self) -> list[str]:
        """The greetings an empty chat opens with (see FamiliarFacade.local_greetings)."""
        from app.runtime.cards import alternate_greetings  # the card code (tomlkit, lore formats): only when asked

        alternates = await asyncio.to_thread(alternate_greetings, self._folder) if self._folder is not None else []
        name = self._display_name()
        found: list[str] = []
        for text in (self._greeting(), *alternates):
            shown = expand(text, name, OWNER_NAME).strip()
            if shown and shown not in found:
                found.append(shown)
        return found

    async def regenerate(self, turn_id: int) -> ChatLine:
        """Answer the chat's last line `turn_id` again (see FamiliarFacade.regenerate_local)."""
        recent = await self._history.recent_turns(LOCAL_PLACE, 2)
        if not recent or recent[-1].id != turn_id:
            raise FamiliarError("That is no longer the chat's last message: only the last one can be answered again.")
        last = recent[-1]
        if last.author_key == OWNER_KEY:  # its reply failed: answer it now
            self._check_endpoint()
            return await self._answer(last)
        said = recent[0] if len(recent) == 2 else None
        if last.mode == GREETING_MODE or said is None or said.author_key != OWNER_KEY:
            raise FamiliarError("Only a reply to your message can be regenerated.")
        self._check_endpoint()
        reply, explanation_id = await self._replies.answer(LOCAL_PLACE, said)
        turn = await self._history.revise_turn(last.id, reply, datetime.now(UTC))
        # None: the very same words again (or a revision made meanwhile): the turn stands, explained anew.
        await self._explanations.link(explanation_id, [(turn or last).id])
        return chat_line(turn or last)

    async def clear(self) -> ChatCleared:
        """Start the chat afresh (see FamiliarFacade.clear_local)."""
        try:
            restart = await self._starts.restart(LOCAL_PLACE)
        except StoreError as exc:
            raise FamiliarError(f"The local chat could not be cleared: {exc}") from exc
        return ChatCleared(messages=restart.turns, before=restart.before, after=restart.after)

    async def restore(self, cleared: ChatCleared) -> int:
        """Undo `clear` (see FamiliarFacade.restore_local)."""
        restart = Restart(LOCAL_PLACE, cleared.before, cleared.after, cleared.messages)
        try:
            restored = await self._starts.restore(restart)
        except StoreError as exc:
            raise FamiliarError(f"The local chat could not be brought back: {exc}") from exc
        if not restored:
            raise FamiliarError("The local chat was cleared again since: the messages of that clear stay cleared.")
        return cleared.messages

    def _check_endpoint(self) -> None:
        missing = self._missing()
        if missing:
            raise FamiliarError(missing_setup(missing))

    async def _answer(self, said: Turn) -> ChatLine:
        reply, explanation_id = await self._replies.answer(LOCAL_PLACE, said)
        turn = (await self._store([_new_turn(SELF_KEY, self._display_name(), reply, datetime.now(UTC))]))[0]
        await self._explanations.link(explanation_id, [turn.id])
        return chat_line(turn)

    async def _store(self, turns: list[NewTurn]) -> list[Turn]:
        ids = await self._history.append_turns(turns)
        stored = await self._history.store.turns_by_ids(ids)
        if len(stored) != len(turns):  # pragma: no cover - local turns carry no message id, so they are never skipped
            raise FamiliarError("the local chat could not be saved")
        return stored


def _new_turn(author_key: str, author_name: str, content: str, at: datetime, *, mode: str = "text") -> NewTurn:
    return NewTurn(
        platform="local",
        place=LOCAL_PLACE,
        channel_id=0,
        author_key=author_key,
        author_name=author_name,
        content=content,
        created_at=at,
        mode=mode,
    )


def chat_line(turn: Turn) -> ChatLine:
    return ChatLine(
        turn_id=turn.id,
        author=turn.author_name,
        content=turn.content,
        from_familiar=turn.author_key == SELF_KEY,
        created_at=turn.created_at,
        greeting=turn.mode == GREETING_MODE,
    )
