"""What the familiar does with the conversation a chat platform hands it (the `MessageSink` an adapter
feeds, in the runtime's own message types): every message stored as a turn, the reply to one built
from the channel's history up to it, the reply's messages stored with its explanation linked,
messages missed while offline stored unanswered, edits and deletions carried into the memory.

While the disk is full (app/runtime/outage.py), what cannot be stored is noted to get back once there
is room: a message is fetched again from the platform's history, an edit or a deletion done again. A
live message in a place that missed some waits for that place's catch-up first."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from app.memory.explanations import Explanations
from app.memory.history import History
from app.memory.records import SELF_KEY, NewTurn, Turn
from app.runtime.errors import DiskFullError
from app.runtime.messages import IncomingMessage, SentMessage
from app.runtime.outage import StorageOutage
from app.runtime.places import PlaceNamer
from app.runtime.replies import Replies

_log = logging.getLogger(__name__)

# How many of a channel's newest stored messages a backfill looks at again: a crash in a burst can
# leave a reply Discord accepted unstored among them.
BACKFILL_OVERLAP = 50
_REMEMBERED_REPLIES = 256  # explanations kept until their reply's messages are sent


class Conversation:
    def __init__(
        self,
        history: History,
        replies: Replies,
        explanations: Explanations,
        place_namer: PlaceNamer,
        outage: StorageOutage,
        *,
        display_name: Callable[[], str],
    ) -> None:
        self._history = history
        self._outage = outage
        self._replies = replies
        self._explanations = explanations
        self._place_namer = place_namer
        self._display_name = display_name
        self._explained: dict[int, int] = {}  # message id -> explanation of its reply

    async def _append(
        self,
        message: IncomingMessage,
        *,
        message_id: int,
        author_key: str,
        author_name: str,
        content: str,
        created_at: datetime,
        reply_to: int | None,
    ) -> Turn | None:
        return await self._history.append_turn(
            NewTurn(
                platform=message.platform,
                place=message.place,
                guild_id=message.guild_id,
                channel_id=message.channel_id,
                message_id=message_id,
                author_key=author_key,
                author_name=author_name,
                content=content,
                created_at=created_at,
                reply_to=reply_to,
            )
        )

    async def on_message(self, message: IncomingMessage) -> None:
        """Store a message. DiskFullError when the disk has no room: it is fetched again later."""
        await self._outage.wait_for(message.place)  # what was missed before it is stored first
        if message.guild_id is not None and message.guild_name and message.channel_name:
            await self._place_namer.note(
                {f"guild:{message.guild_id}": message.guild_name, message.place: message.channel_name}
            )
        with self._outage.writing((message.place, message.channel_id, message.message_id)):
            await self._append(
                message,
                message_id=message.message_id,
                author_key=f"{message.platform}:{message.author_id}",
                author_name=message.author_name,
                content=message.content,
                created_at=message.created_at,
                reply_to=message.reply_to,
            )

    async def reply_for(self, message: IncomingMessage) -> str | None:
        """The reply to one message, built from the channel's history up to that message.

        None when the message is no longer there to answer (deleted before its turn came).
        """
        answering = await self._history.store.latest_revision(message.platform, message.message_id)
        if answering is None or answering.redacted:
            _log.info("message %s was deleted before it could be answered", message.message_id)
            return None
        with self._outage.writing():  # its explanation is stored before it is sent
            text, explanation_id = await self._replies.answer(message.place, answering)
        self._explained[message.message_id] = explanation_id
        while len(self._explained) > _REMEMBERED_REPLIES:
            self._explained.pop(next(iter(self._explained)))
        return text

    async def on_reply_sent(self, message: IncomingMessage, sent: SentMessage) -> int | None:
        """Store a piece of the familiar's reply; returns its turn id (None if it could not be stored:
        on a full disk it is fetched again later, as the familiar's reply, and the rest still goes out)."""
        try:
            with self._outage.writing((message.place, message.channel_id, sent.message_id)):
                turn = await self._append(
                    message,
                    message_id=sent.message_id,
                    author_key=SELF_KEY,
                    author_name=self._display_name(),
                    content=sent.content,
                    created_at=sent.created_at,
                    reply_to=message.message_id,
                )
        except DiskFullError:
            return None
        explanation_id = self._explained.get(message.message_id)
        if turn is None:  # already stored (its gateway echo came first): link the stored one
            turn = await self._history.store.latest_revision(message.platform, sent.message_id)
        if explanation_id is not None and turn is not None:
            try:
                with self._outage.writing():
                    await self._explanations.link(explanation_id, [turn.id])
            except DiskFullError as exc:  # the reply is stored; only "why did it say that" misses it
                _log.warning("reply %s stored without its explanation: %s", turn.id, exc)
        return None if turn is None else turn.id

    async def backfill_point(self, place: str) -> int | None:
        """The message id after which `place` may have missed messages (None: nothing stored there);
        earlier when the disk was full while messages were said there."""
        return self._outage.start_point(place, await self._history.store.resume_point(place, BACKFILL_OVERLAP))

    async def known_dm_channels(self) -> list[tuple[str, int, str | None]]:
        """(place, channel id, the other person's name) of each DM conversation the familiar has had."""
        return await self._history.store.dm_channels()

    async def on_backfill(self, place: str, messages: Sequence[IncomingMessage]) -> int:
        """Messages missed while offline, oldest first, stored as turns and never answered; the
        familiar's own messages are its replies. Already stored or deleted ones are skipped.
        Returns how many were new."""
        name = self._display_name()
        turns = [
            NewTurn(
                platform=m.platform,
                place=place,
                guild_id=m.guild_id,
                channel_id=m.channel_id,
                message_id=m.message_id,
                author_key=SELF_KEY if m.from_familiar else f"{m.platform}:{m.author_id}",
                author_name=name if m.from_familiar else m.author_name,
                content=m.content,
                created_at=m.created_at,
                reply_to=m.reply_to,
            )
            for m in messages
        ]
        try:
            with self._outage.writing():
                stored = len(await self._history.append_turns(turns)) if turns else 0
        except DiskFullError:
            if messages and not self._outage.holds(place):  # the start-up catch-up: fetch them again later
                first = min(messages, key=lambda m: m.message_id)
                self._outage.missed(place, first.channel_id, first.message_id, len(messages))
            raise  # a place that already missed some stays missed, for the next round
        self._outage.caught_up(place)
        return stored

    async def on_edit(self, platform: str, message_id: int, content: str, edited_at: datetime) -> None:
        async def edit() -> None:
            await self._history.edit_message(platform, message_id, content, edited_at)

        try:
            with self._outage.writing():
                await edit()
        except DiskFullError:
            self._outage.later(f"store the edit of message {message_id}", edit)
            raise

    async def on_delete(self, platform: str, message_id: int) -> None:
        deleted_at = datetime.now(UTC)

        async def redact() -> None:
            await self._history.redact_message(platform, message_id, deleted_at)

        try:
            with self._outage.writing():
                await redact()
        except DiskFullError:
            self._outage.later(f"redact deleted message {message_id}", redact)
            raise
