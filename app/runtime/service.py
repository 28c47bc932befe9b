"""The familiar: one object the window and the CLI talk to (the FamiliarFacade), and the sink the
Discord adapter feeds. It owns the store, the LLM clients and the Discord connection."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import discord

from app.config.editing import set_values
from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths, list_familiars
from app.config.secrets import SecretStore
from app.config.settings import BudgetTier, Settings
from app.lore.book import LoreProblem
from app.lore.scanner import describe_disabled
from app.memory.catalog import Catalog
from app.memory.derived import PauseKind, PauseState, Projections, change_counters
from app.memory.embeddings import Embedder, EmbeddingIndex
from app.memory.errors import StoreError
from app.memory.forgets import ForgetQueue
from app.memory.history import History
from app.memory.lore_state import LoreState
from app.memory.records import IndexHealth, NewTurn, Turn
from app.memory.tombstone_keys import VaultKeys, readable_keys
from app.memory.work_queue import WorkQueue
from app.runtime.changes import ChangeBroadcaster
from app.runtime.context.assembler import Assembly
from app.runtime.context.layers import DEFAULT_ORDER, ReplyContext
from app.runtime.context.lore_layer import LorebookLayer, LoreFile
from app.runtime.controls_api import ControlsService
from app.runtime.discord_client import DiscordAdapter
from app.runtime.errors import FamiliarError
from app.runtime.events import ConnectionState, FailureReported, GuildsChanged, IndexHealthReport, RuntimeEvent
from app.runtime.explain import explain
from app.runtime.facade import ChatLine, StatusSnapshot, TurnHit
from app.runtime.indexes_api import IndexesService
from app.runtime.lore_api import LoreDeps, LoreService
from app.runtime.memory_api import MemoryService
from app.runtime.memory_base import MemoryDeps
from app.runtime.memory_ops import MemoryOps
from app.runtime.messages import IncomingMessage
from app.runtime.names import Names
from app.runtime.places import PlaceNamer
from app.runtime.projectors.base import ProjectorDeps
from app.runtime.projectors.runner import ProjectorRunner
from app.runtime.retrieval import Retriever
from app.runtime.view_builder import ViewBuilder
from app.runtime.views import Explanation
from app.runtime.wiring import Loaded, Parts, Shared, build_parts, load_familiar

SELF_KEY = "familiar:self"

_log = logging.getLogger(__name__)

LOCAL_PLACE = "local"
OWNER_KEY = "local:owner"
MAX_LOCAL_CHARS = 8000
# How many of a channel's newest stored messages a backfill looks at again: a crash in a burst can
# leave a reply Discord accepted unstored among them.
BACKFILL_OVERLAP = 50


def channel_key(place: str) -> str:
    """The `[channels.<key>]` table that applies to a place."""
    if place.startswith("guild:") and "/" in place:
        return place.rsplit("/", 1)[1]
    if place.startswith("dm:"):
        return "dm"
    return place


class Familiar:
    """The runtime facade (see app.runtime.facade.FamiliarFacade)."""

    def __init__(
        self, loaded: Loaded, history: History, secret_store: SecretStore, env: dict[str, str] | None = None
    ) -> None:
        self._paths = loaded.paths
        self._env = env
        self.history = history
        self._secret_store = secret_store
        self._subscribers: list[Callable[[RuntimeEvent], None]] = []
        self._discord: DiscordAdapter | None = None
        self._last_error: str | None = None
        self._index_health: dict[str, IndexHealth] = {}
        self.memory_ops = MemoryOps(history, loaded.paths.lorebook_toml, self._other_tombstone_keys)
        self.projections = Projections(history.store)
        self.embeddings = EmbeddingIndex(history.store)
        lore_file = LoreFile(loaded.paths.lorebook_toml)
        lore_state = LoreState(history.store)
        self._shared = Shared(history, self.projections, self.embeddings, self._on_lore_disabled, lore_file, lore_state)
        # Everything the settings, secrets and persona decide: rebuilt and swapped whole by reconfigure().
        self._parts = build_parts(loaded, self._shared)
        self._reconfiguring = asyncio.Lock()
        # One change broadcast (MemoryChanged) after every facade write, worker tick and foreign write.
        self.changes = ChangeBroadcaster(history.store, self.publish)
        self.work_queue = WorkQueue(history.store)
        self.learning = ProjectorRunner(
            self._parts.projectors,
            self._parts.projector_deps,
            self._parts.settings.memory.learning.tick_seconds,
            after_tick=self.changes.check,
        )
        self._explanations: dict[int, int] = {}  # Discord message id -> explanation of its reply
        self._closed = False
        # The facade's typed sub-APIs, shared by the window and the CLI.
        catalog = Catalog(history.store)
        self._names = Names(catalog, lambda: self.settings.familiar.display_name)
        self._place_namer = PlaceNamer(catalog)
        self.memory = MemoryService(
            MemoryDeps(
                history=history,
                projections=self.projections,
                catalog=catalog,
                forgets=ForgetQueue(history.store, history.facts),
                views=ViewBuilder(history.store, self._names),
                changes=self.changes,
                current_retriever=lambda: self._parts.retriever,
                ops=self.memory_ops,
            )
        )
        self.controls = ControlsService(
            self.projections,
            self.work_queue,
            catalog,
            self._names,
            self.changes,
            self.set_paused,
            lambda: self.learning.names,
        )
        self.indexes = IndexesService(self.memory_ops, history)
        self.lore = LoreService(
            LoreDeps(
                file=lore_file,
                state=lore_state,
                history=history,
                names=self._names,
                changes=self.changes,
                budget_for=self._budget_for,
                display_name=lambda: self.settings.familiar.display_name,
                publish=self.publish,
            )
        )

    # -- the parts the settings decide -----------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        return self._parts.embedder

    @property
    def retriever(self) -> Retriever:
        return self._parts.retriever

    @property
    def lorebook_layer(self) -> LorebookLayer:
        return self._parts.lorebook

    @property
    def projector_deps(self) -> ProjectorDeps:
        return self._parts.projector_deps

    async def reconfigure(self) -> None:
        """Read character.toml, character.md, the secrets and the environment again, and put what
        depends on them in place as one set: replies, the memory workers, recall, the persona and
        the lorebook use the new settings from their next request on. A request already under way
        finishes as it began.

        Bad settings raise FamiliarError (file, line, key) and change nothing. The Discord
        connection is not dropped: a new bot token or server address is used at its next start.
        """
        async with self._reconfiguring:
            if self._closed:
                raise FamiliarError("the familiar is closed; open it again to use new settings")
            try:
                loaded = load_familiar(self._paths, self._secret_store, self._env)
            except ConfigError as exc:
                raise FamiliarError(str(exc)) from exc
            parts = build_parts(loaded, self._shared, previous=self._parts)
            old, self._parts = self._parts, parts
            self.learning.replace(parts.projectors, parts.projector_deps, parts.settings.memory.learning.tick_seconds)
            await old.retire()
        _log.info("settings reloaded from %s", self._paths.folder)

    @classmethod
    async def open(cls, paths: FamiliarPaths, secret_store: SecretStore, env: dict[str, str] | None = None) -> Familiar:
        loaded = load_familiar(paths, secret_store, env)
        holder: list[Familiar] = []

        def on_health(health: IndexHealth) -> None:
            if holder:
                holder[0]._on_index_health(health)

        try:
            history = await History.open(
                paths.history_db, paths.fts, paths.backups, on_health=on_health, keys=VaultKeys(secret_store)
            )
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        except OSError as exc:  # a file of the familiar's folder it cannot use: name it, no traceback
            where = exc.filename or paths.folder
            raise FamiliarError(f"{where}: cannot be used ({exc.strerror or exc}); check its permissions") from exc
        familiar = cls(loaded, history, secret_store, env)
        holder.append(familiar)
        try:
            await familiar.memory_ops.finish_interrupted_import()  # an import killed after its commit is finished
        except BaseException:
            await familiar.close()
            raise
        try:
            # Forgets whose undo window ended while no window ran (a crash) are applied before anything reads.
            await familiar.memory.apply_due_forgets()
            await familiar.changes.prime()
        except (FamiliarError, StoreError) as exc:
            _log.warning("could not finish deferred forgets at start: %s", exc)
        return familiar

    def _other_tombstone_keys(self) -> list[bytes]:
        """The tombstone keys of this machine's other familiars (blocking: keyring calls), where an
        import without its key may find the one its tombstones were made with."""
        paths = self._paths
        others = [name for name in list_familiars(paths.root) if name != paths.name]
        return readable_keys(self._secret_store.for_familiar(name) for name in others)

    async def close(self) -> None:
        """Stop everything and close the store. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        await self.stop()
        await self.learning.close()
        # The window closing ends the undo window of the forgets it scheduled: apply them now.
        await self.memory.close_forgets()
        await self.changes.close()
        await self.lore.close()
        await self._place_namer.close()
        await self._parts.aclose()
        await self.history.close()

    def start_watching(self) -> None:
        """For the window: publish foreign writes (the CLI beside it) and apply deferred forgets on time."""
        self.changes.start()
        self.memory.start_forget_timer()
        self.lore.start_watching()

    # -- facade: memory work ---------------------------------------------------------------------
    async def start_learning(self) -> None:
        """Start the background memory workers (the window and headless mode; not one-shot commands)."""
        await self.work_queue.requeue_running()
        self.learning.start()

    async def learn_now(self) -> dict[str, str]:
        """Run every memory worker once, now; returns what each reported."""
        await self.learning.tick()
        return dict(self.learning.reports)

    async def pause_state(self) -> PauseState:
        return await self.projections.pause_state()

    async def set_paused(self, kind: PauseKind, where: str, paused: bool) -> PauseState:
        """Pause or resume learning or recall, everywhere ("*") or in one place; kept across restarts."""
        try:
            state = await self.projections.set_paused(kind, where, paused)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        self._parts.assembler.clear()
        if not paused:
            self.learning.nudge()
        return state

    async def explain(self, turn_id: int) -> Explanation:
        """What went into the reply that produced this turn."""
        return await explain(self.projections, self.history.facts, self._names, turn_id)

    # -- facade: identity and events -----------------------------------------------------------
    @property
    def familiar_name(self) -> str:
        return self._paths.name

    @property
    def paths(self) -> FamiliarPaths:
        return self._paths

    @property
    def home(self) -> Path:
        return self._paths.folder

    @property
    def secrets_location(self) -> str:
        return self._secret_store.backend_name

    @property
    def settings(self) -> Settings:
        return self._parts.settings

    def subscribe(self, callback: Callable[[RuntimeEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def publish(self, event: RuntimeEvent) -> None:
        if isinstance(event, FailureReported):
            self._last_error = event.message
        elif isinstance(event, GuildsChanged):
            self._place_namer.note_guilds(event.guilds)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - one broken listener must not silence the others
                _log.exception("event listener failed")

    def _missing(self) -> tuple[str, ...]:
        missing: list[str] = []
        if not self._parts.loaded.secrets.discord_token:
            missing.append("bot token")
        missing.extend(self._parts.reply_llm.endpoint.missing())
        return tuple(missing)

    def get_status(self) -> StatusSnapshot:
        adapter = self._discord
        missing = self._missing()
        return StatusSnapshot(
            state=adapter.state if adapter is not None else ConnectionState.STOPPED,
            guilds=adapter.guilds if adapter is not None else (),
            latency_ms=adapter.latency_ms if adapter is not None else None,
            last_error=self._last_error,
            configured=not missing,
            missing=missing,
            lore_problem=self.lore.problem,
        )

    # -- facade: Discord -----------------------------------------------------------------------
    async def start(self) -> None:
        missing = self._missing()
        if "bot token" in missing:
            raise self._fail("No bot token yet: paste it in Settings, or set DISCORD_TOKEN.")
        if missing:
            raise self._fail(f"No {' and no '.join(missing)} yet: set them in Settings.")
        if self._discord is not None:
            return
        loaded = self._parts.loaded
        adapter = DiscordAdapter(loaded.settings.discord, loaded.secrets.discord_token, self, self.publish)
        self._discord = adapter
        try:
            await adapter.start()
        except FamiliarError as exc:
            self._discord = None
            self.publish(FailureReported(message=str(exc)))
            raise

    async def stop(self) -> None:
        adapter, self._discord = self._discord, None
        if adapter is not None:
            await adapter.stop()

    def _on_lore_disabled(self, problems: list[LoreProblem]) -> None:
        """A lorebook regex key ran over its time limit and is off: say so in the window (the log has it)."""
        self.publish(FailureReported(message=describe_disabled(problems[0])))

    def _fail(self, message: str) -> FamiliarError:
        self.publish(FailureReported(message=message))
        return FamiliarError(message)

    async def wait_closed(self) -> BaseException | None:
        """For headless mode: wait until the Discord connection ends by itself (fatal close)."""
        adapter = self._discord
        if adapter is None:
            return None
        return await adapter.wait_closed()

    # -- MessageSink: what the familiar does with Discord traffic --------------------------------
    async def _append_discord(
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
        return await self.history.append_turn(
            NewTurn(
                platform="discord",
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

    async def on_discord_message(self, message: IncomingMessage) -> None:
        if message.guild_id is not None and message.guild_name and message.channel_name:
            await self._place_namer.note(
                {f"guild:{message.guild_id}": message.guild_name, message.place: message.channel_name}
            )
        await self._append_discord(
            message,
            message_id=message.message_id,
            author_key=f"discord:{message.author_id}",
            author_name=message.author_name,
            content=message.content,
            created_at=message.created_at,
            reply_to=message.reply_to,
        )

    async def reply_for(self, message: IncomingMessage) -> str | None:
        """The reply to one message, built from the channel's history up to that message.

        None when the message is no longer there to answer (deleted before its turn came).
        """
        answering = await self.history.store.latest_revision("discord", message.message_id)
        if answering is None or answering.redacted:
            _log.info("message %s was deleted before it could be answered", message.message_id)
            return None
        text, explanation_id = await self._reply(message.place, answering)
        self._explanations[message.message_id] = explanation_id
        while len(self._explanations) > 256:
            self._explanations.pop(next(iter(self._explanations)))
        return text

    async def on_discord_reply_sent(self, message: IncomingMessage, sent: discord.Message) -> None:
        turn = await self._append_discord(
            message,
            message_id=sent.id,
            author_key=SELF_KEY,
            author_name=self.settings.familiar.display_name,
            content=sent.content,
            created_at=sent.created_at,
            reply_to=message.message_id,
        )
        explanation_id = self._explanations.get(message.message_id)
        if turn is None:  # already stored (its gateway echo came first): link the stored one
            turn = await self.history.store.latest_revision("discord", sent.id)
        if explanation_id is not None and turn is not None:
            await self.projections.link_explanation(explanation_id, [turn.id])

    async def backfill_point(self, place: str) -> int | None:
        """The message id after which `place` may have missed messages (None: nothing stored there)."""
        return await self.history.store.resume_point(place, BACKFILL_OVERLAP)

    async def known_dm_channels(self) -> list[tuple[str, int, str | None]]:
        """(place, channel id, the other person's name) of each DM conversation the familiar has had."""
        return await self.history.store.dm_channels()

    async def on_discord_backfill(self, place: str, messages: Sequence[IncomingMessage]) -> int:
        """Messages missed while offline, oldest first, stored as turns and never answered; the
        familiar's own messages are its replies. Already stored or deleted ones are skipped.
        Returns how many were new."""
        name = self.settings.familiar.display_name
        turns = [
            NewTurn(
                platform="discord",
                place=place,
                guild_id=m.guild_id,
                channel_id=m.channel_id,
                message_id=m.message_id,
                author_key=SELF_KEY if m.from_familiar else f"discord:{m.author_id}",
                author_name=name if m.from_familiar else m.author_name,
                content=m.content,
                created_at=m.created_at,
                reply_to=m.reply_to,
            )
            for m in messages
        ]
        return len(await self.history.append_turns(turns)) if turns else 0

    async def on_discord_edit(self, message_id: int, content: str, edited_at: datetime) -> None:
        await self.history.edit_message("discord", message_id, content, edited_at)

    async def on_discord_delete(self, message_id: int) -> None:
        await self.history.redact_message("discord", message_id, datetime.now(UTC))

    async def context_for(self, place: str, answering: Turn | None = None) -> ReplyContext:
        """What a reply at `place` is built from; for `answering`, the history window ends at that
        message, so it is the last thing said in the prompt whatever arrived after it."""
        settings = self.settings
        tier, budget = self._tier_for(place)
        ending_at = answering.id if answering is not None else None
        recent, pause, versions = await asyncio.gather(
            self.history.recent_turns(place, settings.history.recent_turns, ending_at=ending_at),
            self.projections.pause_state(),
            change_counters(self.history.store),
        )
        return ReplyContext(
            place=place,
            display_name=settings.familiar.display_name,
            tier=tier,
            budget=budget,
            recent=tuple(recent),
            recall_paused=pause.paused("recall", place),
            versions=versions,
            now=datetime.now(UTC),
        )

    def _tier_for(self, place: str) -> tuple[str, BudgetTier]:
        """The budget tier in force at a place (its channel's, else the familiar's)."""
        settings = self.settings
        section = settings.channels.get(channel_key(place))
        tier = (section.budget_tier if section else "") or settings.budget.tier
        budget: BudgetTier = getattr(settings.budget, tier)
        return tier, budget

    def _budget_for(self, place: str) -> BudgetTier:
        return self._tier_for(place)[1]

    async def assemble(self, place: str, answering: Turn | None = None) -> Assembly:
        """The prompt a reply at `place` (to `answering`, else to the newest message) would get now,
        and its explanation (no LLM call)."""
        return await self._assemble(self._parts, place, answering)

    async def _assemble(self, parts: Parts, place: str, answering: Turn | None) -> Assembly:
        section = parts.settings.channels.get(channel_key(place))
        order = (section.prompt_layers if section else ()) or DEFAULT_ORDER
        return await parts.assembler.assemble(await self.context_for(place, answering), order)

    async def _reply(self, place: str, answering: Turn) -> tuple[str, int]:
        parts = self._parts  # one set for the whole reply, even if the settings change meanwhile
        assembly = await self._assemble(parts, place, answering)
        text = await parts.reply_llm.complete(assembly.messages)
        explanation_id = await self.projections.save_explanation(place, assembly.explanation, [])
        await parts.lorebook.commit(place, answering.id)  # the lore's timed effects, once used
        return text, explanation_id

    # -- facade: local chat --------------------------------------------------------------------
    async def chat_local(self, text: str) -> ChatLine:
        text = text.strip()
        if not text:
            raise FamiliarError("Type a message first.")
        if len(text) > MAX_LOCAL_CHARS:
            raise FamiliarError(f"That message is too long ({len(text)} characters, at most {MAX_LOCAL_CHARS}).")
        missing = self._parts.reply_llm.endpoint.missing()
        if missing:
            raise FamiliarError(f"No {' and no '.join(missing)} yet: set them in Settings.")
        said = await self._append_local(OWNER_KEY, "You", text)
        reply, explanation_id = await self._reply(LOCAL_PLACE, said)
        turn = await self._append_local(SELF_KEY, self.settings.familiar.display_name, reply)
        await self.projections.link_explanation(explanation_id, [turn.id])
        return _chat_line(turn)

    async def _append_local(self, author_key: str, author_name: str, content: str) -> Turn:
        turn = await self.history.append_turn(
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

    async def load_local_history(self, limit: int = 50) -> list[ChatLine]:
        return [_chat_line(t) for t in await self.history.recent_turns(LOCAL_PLACE, limit)]

    # -- facade: memory --------------------------------------------------------------------------
    async def search_turns(self, query: str, limit: int = 20) -> list[TurnHit]:
        try:
            hits = await self.history.search_turns(query, limit)
        except ValueError as exc:
            raise FamiliarError(str(exc)) from exc
        return [
            TurnHit(
                turn_id=h.turn.id,
                where=h.turn.place,
                author=h.turn.author_name,
                content=h.turn.content,
                created_at=h.turn.created_at,
                score=h.score,
            )
            for h in hits
        ]

    def _on_index_health(self, health: IndexHealth) -> None:
        self._index_health[health.name] = health
        shared = {f.name for f in dataclasses.fields(IndexHealthReport)} - {"at"}
        self.publish(IndexHealthReport(**{name: getattr(health, name) for name in shared}))

    def index_health(self) -> tuple[IndexHealth, ...]:
        """The last published health of each index (get_*: no I/O)."""
        return tuple(self._index_health.get(c.index.spec.name) or c.health() for c in self.history.indexes())

    # -- facade: settings ------------------------------------------------------------------------
    async def save_credentials(
        self, *, bot_token: str | None, llm_base_url: str | None, llm_api_key: str | None, llm_model: str | None
    ) -> None:
        values: dict[str, str] = {}
        if llm_base_url is not None:
            url = llm_base_url.strip()
            if url and not url.startswith(("http://", "https://")):
                raise FamiliarError(f"The LLM endpoint must start with http:// or https:// (got '{url}').")
            values["llm.base_url"] = url
        if llm_model is not None:
            values["llm.model"] = llm_model.strip()
        if values:
            try:
                set_values(self._paths.character_toml, values)
            except ConfigError as exc:
                raise FamiliarError(str(exc)) from exc
        if bot_token is not None:
            self._secret_store.set("discord_token", bot_token.strip())
        if llm_api_key is not None:
            self._secret_store.set("llm_api_key", llm_api_key.strip())
        await self.reconfigure()

    async def test_llm_endpoint(self) -> str:
        return await self._parts.reply_llm.check()


def _chat_line(turn: Turn) -> ChatLine:
    return ChatLine(
        turn_id=turn.id,
        author=turn.author_name,
        content=turn.content,
        from_familiar=turn.author_key == SELF_KEY,
        created_at=turn.created_at,
    )
