"""The familiar: the facade the window and the CLI talk to (app.runtime.api.facade.FamiliarFacade), and
the composition root of the runtime: it builds the parts, owns their lifetimes and delegates.

The jobs are elsewhere: what the settings decide (wiring.py, swapped whole by `reconfigure`), the
conversation a platform hands over (conversation.py), how a reply is built (replies.py), the local
chat (local_chat.py), events (event_hub.py), the memory sub-APIs (runtime/api/memory.py, runtime/api/controls.py,
runtime/api/indexes.py) and the background memory workers (projectors/).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths, list_familiars
from app.config.redaction import url_secrets
from app.config.secrets import SecretStore
from app.config.settings import Settings
from app.lore.book import LoreProblem
from app.lore.scanner import describe_disabled
from app.memory.catalog import Catalog
from app.memory.derived import Projections
from app.memory.embeddings import Embedder, EmbeddingIndex
from app.memory.errors import STORE_FAILURES, StoreError
from app.memory.explanations import Explanations
from app.memory.forgets import ForgetQueue
from app.memory.history import History
from app.memory.liveness import LoopHealth
from app.memory.lore_state import LoreState
from app.memory.pauses import PauseKind, PauseState, PauseSwitches
from app.memory.records import IndexHealth
from app.memory.reply_index import ReplyIndex
from app.memory.tombstone_keys import VaultKeys, readable_keys
from app.memory.work_queue import WorkQueue
from app.runtime.api.character import CharacterService
from app.runtime.api.controls import ControlsService
from app.runtime.api.facade import ChatCleared, ChatLine, StatusSnapshot, TurnHit
from app.runtime.api.indexes import IndexesService
from app.runtime.api.lore import LoreDeps, LoreService
from app.runtime.api.memory import MemoryService
from app.runtime.api.memory_base import MemoryDeps
from app.runtime.api.memory_ops import MemoryOps
from app.runtime.api.setup import SetupService
from app.runtime.api.view_builder import ViewBuilder
from app.runtime.api.views import Explanation, SourceMessage
from app.runtime.changes import ChangeBroadcaster
from app.runtime.context.lore_layer import LorebookLayer, LoreFile
from app.runtime.conversation import Conversation
from app.runtime.errors import DiskFullError, FamiliarError
from app.runtime.event_hub import EventHub
from app.runtime.events import (
    ChangeKind,
    ConnectionChanged,
    ConnectionState,
    FailureReported,
    IndexHealthReport,
    RuntimeEvent,
    SettingsReloaded,
)
from app.runtime.explain import explain
from app.runtime.hints import missing_setup
from app.runtime.local_chat import LocalChat
from app.runtime.messages import ChatConnection
from app.runtime.names import Names
from app.runtime.outage import STORE, StorageOutage, disk_full_line
from app.runtime.places import PlaceNamer
from app.runtime.platforms import connection_for
from app.runtime.projectors.base import ProjectorDeps
from app.runtime.projectors.runner import ProjectorRunner
from app.runtime.replies import Replies
from app.runtime.retrieval import Retriever
from app.runtime.wiring import Loaded, Shared, build_parts, load_familiar

if TYPE_CHECKING:  # discord.py loads with the adapter, on Start: not for the window, the CLI or the store
    pass

_log = logging.getLogger(__name__)


class Familiar:
    """The runtime facade (see app.runtime.api.facade.FamiliarFacade)."""

    def __init__(
        self, loaded: Loaded, history: History, secret_store: SecretStore, env: dict[str, str] | None = None
    ) -> None:
        self._paths = loaded.paths
        self._env = env
        self.history = history
        self._secret_store = secret_store
        self._events = EventHub()
        self._discord: ChatConnection | None = None
        self._index_health: dict[str, IndexHealth] = {}
        self._closed = False
        self._client_loading: asyncio.Task[None] | None = None
        self._refused: str | None = None  # the last start refused for a missing setting: why
        self.memory_ops = MemoryOps(history, loaded.paths.lorebook_toml, self._other_tombstone_keys)
        self.projections = Projections(history.store)
        self.pauses = PauseSwitches(history.store)
        self.explanations = Explanations(history.store)
        self.embeddings = EmbeddingIndex(history.store)
        lore_file = LoreFile(loaded.paths.lorebook_toml)  # the last good book while the file does not read
        lore_state = LoreState(history.store)  # the lore's timed effects per place
        self._shared = Shared(history, self.projections, self.embeddings, self._on_lore_disabled, lore_file, lore_state)
        # Everything the settings, secrets and persona decide: rebuilt and swapped whole by reconfigure().
        self._parts = build_parts(loaded, self._shared)
        self._reconfiguring = asyncio.Lock()
        catalog = Catalog(history.store)
        self._place_namer = PlaceNamer(catalog)
        self._events.subscribe(self._place_namer.on_event)  # first: names are known before anyone shows them
        # One change broadcast (MemoryChanged) after every facade write, worker tick and foreign write.
        self.changes = ChangeBroadcaster(
            history.store,
            self.publish,
            files={
                ChangeKind.LOREBOOK_FILE: (loaded.paths.lorebook_toml,),
                ChangeKind.CHARACTER_FILES: (loaded.paths.character_toml, loaded.paths.character_md),
            },
        )
        self.work_queue = WorkQueue(history.store)
        # A full disk: what could not be stored is fetched again (or done again) once there is room.
        self.outage = StorageOutage(loaded.paths.folder, self.publish, history.store.probe_room)
        self.learning = ProjectorRunner(
            self._parts.projectors,
            self._parts.projector_deps,
            self._parts.settings.memory.learning.tick_seconds,
            after_tick=self.changes.check,
            on_disk_full=lambda exc: self.outage.refused(STORE, exc),
        )
        self.replies = Replies(history, self.pauses, self.explanations, lambda: self._parts)
        self.conversation = Conversation(
            history, self.replies, self.explanations, self._place_namer, self.outage, display_name=self._display_name
        )
        self.local_chat = LocalChat(
            history,
            self.replies,
            self.explanations,
            display_name=self._display_name,
            missing=lambda: self._parts.reply_llm.endpoint.missing(),
            greeting=lambda: self._parts.settings.familiar.greeting,
            folder=loaded.paths.folder,
        )
        # The facade's typed sub-APIs, shared by the window and the CLI.
        self._names = Names(catalog, self._display_name)
        self.memory = MemoryService(
            MemoryDeps(
                history=history,
                projections=self.projections,
                pauses=self.pauses,
                catalog=catalog,
                forgets=ForgetQueue(history.store, history.facts),
                views=ViewBuilder(history.store, self._names),
                changes=self.changes,
                current_retriever=lambda: self._parts.retriever,
                ops=self.memory_ops,
            )
        )
        self.controls = ControlsService(
            self.pauses,
            self.projections,
            self.work_queue,
            catalog,
            self._names,
            self.changes,
            self.set_paused,
            lambda: self.learning.names,
        )
        self.indexes = IndexesService(
            self.memory_ops,
            history,
            embedder=lambda: self.embedder,
            embeddings=self.embeddings,
            backend=lambda: self.settings.providers.embedding.backend,
            workers=lambda: self.learning.names,
            changes=self.changes,
            loops=self.background_loops,
        )
        self.setup = SetupService(loaded.paths, secret_store, env, lambda: self._parts.loaded, self.reconfigure)
        self.lore = LoreService(
            LoreDeps(
                file=lore_file,
                state=lore_state,
                history=history,
                names=self._names,
                changes=self.changes,
                budget_for=self.replies.budget_for,
                display_name=self._display_name,
                publish=self.publish,
            )
        )
        self.character = CharacterService(
            loaded.paths,
            catalog,
            self._display_name,
            self.reconfigure,
            lambda: self._discord.text_channels() if self._discord is not None else None,
            env,
        )

    def _display_name(self) -> str:
        return self._parts.settings.familiar.display_name

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
            if self._discord is not None:  # whom and where it answers changes now; the connection at its next start
                self._discord.use_answering_rules(parts.settings.discord)
            await old.retire()
        refused = self._refused
        if refused is not None and refused != self._setup_failure():
            # A start refused for a missing setting: that setting is there now, so the failure no longer holds.
            self._refused = None
            self._events.withdraw_error(refused)
        _log.info("settings reloaded from %s", self._paths.folder)
        self.publish(SettingsReloaded(display_name=self._display_name()))

    @classmethod
    async def open(
        cls,
        paths: FamiliarPaths,
        secret_store: SecretStore,
        env: dict[str, str] | None = None,
        *,
        reading: bool = False,
    ) -> Familiar:
        """`reading`: for a command that only reads (a search, a listing, a status, an export): opening
        writes nothing it need not, and on a full disk the store is read as it stands (app.memory.store)."""
        loaded = load_familiar(paths, secret_store, env)
        holder: list[Familiar] = []

        def on_health(health: IndexHealth) -> None:
            if holder:
                holder[0]._on_index_health(health)

        try:
            history = await History.open(
                paths.history_db,
                paths.fts,
                paths.backups,
                on_health=on_health,
                keys=VaultKeys(secret_store),
                reading=reading,
            )
        except Exception as exc:
            # Opening writes (the tombstone key's record, a migration's backup): a full disk says so in one line.
            if (full := disk_full_line(exc, paths.folder)) is not None:
                raise DiskFullError(full) from exc
            if isinstance(exc, StoreError):
                raise FamiliarError(str(exc)) from exc
            if isinstance(exc, OSError):  # a file of the familiar's folder it cannot use: name it, no traceback
                where = exc.filename or paths.folder
                raise FamiliarError(f"{where}: cannot be used ({exc.strerror or exc}); check its permissions") from exc
            raise
        familiar = cls(loaded, history, secret_store, env)
        holder.append(familiar)
        try:
            await familiar.memory_ops.finish_interrupted_import()  # an import killed after its commit is finished
        except BaseException as exc:
            await familiar.close()
            if isinstance(exc, Exception) and (full := disk_full_line(exc, paths.folder)) is not None:
                raise DiskFullError(full) from exc
            raise
        try:
            # Forgets whose undo window ended while no window ran (a crash) are applied before anything reads.
            await familiar.memory.apply_due_forgets()
            await familiar.changes.prime()
        except FamiliarError as exc:
            _log.warning("could not finish deferred forgets at start: %s", exc)
        except STORE_FAILURES as exc:  # a full disk too: they are applied on the forget timer's next tick
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
        if self._client_loading is not None and not self._client_loading.done():
            self._client_loading.cancel()  # the import goes on on its thread; nothing waits for it
            with contextlib.suppress(asyncio.CancelledError):
                await self._client_loading
        await self.stop()
        await self.outage.close()
        await self.learning.close()
        # The window closing ends the undo window of the forgets it scheduled: apply them now.
        await self.memory.close_forgets()
        await self.changes.close()
        await self.lore.close()
        await self._place_namer.close()
        await self._parts.aclose()
        await self.history.close()

    def background_loops(self) -> list[LoopHealth]:
        """Every loop this process runs beside the conversation, as it stands (see app/memory/liveness.py)."""
        return [
            *(committer.loop_health() for committer in self.history.indexes()),
            self.learning.loop_health(),
            self.changes.loop_health(),
            self.lore.loop_health(),
            self.memory.forget_timer_health(),
        ]

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
        if self._client_loading is None:
            from app.runtime.llm import load_client_library

            self._client_loading = asyncio.create_task(load_client_library(), name="load the LLM client")

    async def client_loaded(self) -> None:
        """Until the LLM client library has loaded (start_learning begins loading it off the loop)."""
        if self._client_loading is not None:
            await asyncio.shield(self._client_loading)

    async def learn_now(self) -> dict[str, str]:
        """Run every memory worker once, now; returns what each reported."""
        await self.learning.tick()
        return dict(self.learning.reports)

    async def pause_state(self) -> PauseState:
        return await self.pauses.state()

    async def set_paused(self, kind: PauseKind, where: str, paused: bool) -> PauseState:
        """Pause or resume learning or recall, everywhere ("*") or in one place; kept across restarts."""
        try:
            state = await self.pauses.set(kind, where, paused)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        self._parts.assembler.clear()
        if not paused:
            self.learning.nudge()
        return state

    async def explain(self, turn_id: int) -> Explanation:
        """What went into the reply that produced this turn."""
        return await explain(self.explanations, self.history.facts, self._names, turn_id)

    async def newest_reply(self, place: str | None = None) -> int | None:
        try:
            return await ReplyIndex(self.history.store).newest_reply(place)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc

    async def previous_explanation(self, turn_id: int) -> Explanation | None:
        try:
            previous = await ReplyIndex(self.history.store).previous_reply(turn_id)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        return None if previous is None else await self.explain(previous)

    async def answered_message(self, turn_id: int) -> SourceMessage | None:
        try:
            answered = await ReplyIndex(self.history.store).answered(turn_id)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        found = [] if answered is None else await self.memory.sources([answered])
        return found[0] if found else None

    # -- facade: identity and events -----------------------------------------------------------
    @property
    def familiar_name(self) -> str:
        return self._paths.name

    @property
    def display_name(self) -> str:
        return self._display_name()

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

    def secret_values(self) -> tuple[str, ...]:
        """What no text the familiar writes may carry (get_*-like, no I/O; the settings in force now): the
        bot token, the API keys, the password in an endpoint's address. The log handlers ask it at each
        line (app.logs.redact_known)."""
        parts = self._parts
        discord = parts.settings.discord
        return (
            parts.loaded.secrets.discord_token,
            *parts.reply_llm.endpoint.secrets(),
            *parts.background_llm.endpoint.secrets(),
            *url_secrets(discord.api_base),
            *url_secrets(discord.gateway_url),
        )

    def subscribe(self, callback: Callable[[RuntimeEvent], None]) -> Callable[[], None]:
        return self._events.subscribe(callback)

    def publish(self, event: RuntimeEvent) -> None:
        self._events.publish(event)

    def _missing(self) -> tuple[str, ...]:
        missing: list[str] = []
        if not self._parts.loaded.secrets.discord_token:
            missing.append("bot token")
        missing.extend(self._parts.reply_llm.endpoint.missing())
        return tuple(missing)

    def get_status(self) -> StatusSnapshot:
        adapter = self._discord
        missing = self._missing()
        # The state is the last one published: what the status bar and every other listener were told, also
        # after a failed start has dropped its adapter (Failed, with why, until the next start or stop).
        connection = self._events.connection
        return StatusSnapshot(
            state=connection.state,
            guilds=adapter.guilds if adapter is not None else (),
            latency_ms=adapter.latency_ms if adapter is not None else None,
            last_error=self._events.last_error,
            configured=not missing,
            missing=missing,
            lore_problem=self.lore.problem,
            state_detail=connection.detail,
            disk_full=self.outage.banner(),
        )

    def _setup_failure(self) -> str | None:
        """Why Start would be refused now for what is not set yet (None: nothing is missing)."""
        missing = self._missing()
        return missing_setup(missing) if missing else None

    # -- facade: Discord -----------------------------------------------------------------------
    async def start(self) -> None:
        refused = self._setup_failure()
        if refused is not None:
            self._refused = refused
            raise self._fail(refused)
        if self._discord is not None:
            return
        # The platform's library (discord.py and aiohttp under it) loads only when the familiar connects:
        # the window and the CLI's memory commands start without it, and nothing else of the runtime knows it.
        loaded = self._parts.loaded
        adapter = connection_for("discord", loaded.settings, loaded.secrets, self.conversation, self.publish)
        self._discord = adapter
        try:
            await adapter.start()
        except FamiliarError as exc:
            self._discord = None
            self.publish(FailureReported(message=str(exc)))
            raise
        self.outage.attach(adapter.catch_up)  # what a full disk kept out is fetched again through it

    async def stop(self) -> None:
        adapter, self._discord = self._discord, None
        self.outage.attach(None)
        if adapter is not None:
            await adapter.stop()
        elif self._events.connection.state is not ConnectionState.STOPPED:  # a failed start left no adapter
            self.publish(ConnectionChanged(state=ConnectionState.STOPPED))

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

    # -- facade: local chat --------------------------------------------------------------------
    async def chat_local(self, text: str, *, greeting: str | None = None) -> ChatLine:
        return await self.local_chat.send(text, greeting=greeting)

    async def load_local_history(self, limit: int = 50) -> list[ChatLine]:
        return await self.local_chat.recent(limit)

    async def local_greetings(self) -> list[str]:
        return await self.local_chat.greetings()

    async def regenerate_local(self, turn_id: int) -> ChatLine:
        return await self.local_chat.regenerate(turn_id)

    async def clear_local(self) -> ChatCleared:
        return await self.local_chat.clear()

    async def restore_local(self, cleared: ChatCleared) -> int:
        return await self.local_chat.restore(cleared)

    # -- facade: memory --------------------------------------------------------------------------
    async def search_turns(self, query: str, limit: int = 20) -> list[TurnHit]:
        try:
            hits = await self.history.search_turns(query, limit)
        except ValueError as exc:
            raise FamiliarError(str(exc)) from exc
        names = await self._names.table(places={h.turn.place for h in hits})
        return [
            TurnHit(
                turn_id=h.turn.id,
                where=h.turn.place,
                place=names.place(h.turn.place),
                author=h.turn.author_name,
                content=h.turn.content,
                created_at=h.turn.created_at,
                score=h.score,
            )
            for h in hits
        ]

    def _on_index_health(self, health: IndexHealth) -> None:
        self._index_health[health.name] = health
        self.outage.index_health(health.name, health.disk_full, health.last_error)
        shared = {f.name for f in dataclasses.fields(IndexHealthReport)} - {"at"}
        self.publish(IndexHealthReport(**{name: getattr(health, name) for name in shared}))

    def index_health(self) -> tuple[IndexHealth, ...]:
        """The last published health of each index (get_*: no I/O)."""
        return tuple(self._index_health.get(c.index.spec.name) or c.health() for c in self.history.indexes())

    # -- facade: settings ------------------------------------------------------------------------
    async def test_llm_endpoint(self) -> str:
        return await self._parts.reply_llm.check()

    async def diagnostics(self, extra_versions: Mapping[str, str] | None = None) -> str:
        """Versions, settings without secrets, index status, the last errors: for a bug report (no secret)."""
        from app.runtime.diagnostics import familiar_report

        return await familiar_report(self, self._parts.loaded.secrets, extra_versions)
