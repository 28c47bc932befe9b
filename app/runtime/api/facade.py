"""The facade the window and the CLI talk to. The UI depends on these Protocols, never on internals.

`FamiliarFacade` is the familiar itself (status, start / stop, local chat, settings, events); its
typed sub-APIs are `memory` (facts, the queue, decisions and their undo, forgetting, people),
`controls` (pause switches, workers), `indexes` (health, rebuild), `setup` (settings in force and
their sources, token and endpoint checks, saving), `lore` (the lorebook) and `character` (the
persona and the settings that make the character, edited and saved), plus `explain(turn_id)`.
They return view records (app/runtime/api/views.py) with names resolved. Every write takes an optional
`initiator`, an opaque token carried on the MemoryChanged it publishes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.runtime.events import ConnectionState, GuildInfo, RuntimeEvent

if TYPE_CHECKING:  # records for annotations only: the window's path to its first paint skips them
    from app.runtime.api.setup_views import (
        CardApplied,
        CardPreview,
        DiscordCheck,
        ModelList,
        SettingsUpdate,
        SettingsView,
        Which,
    )
    from app.runtime.api.views import (
        BackgroundTaskView,
        ChannelCatalog,
        CharacterDraft,
        CharacterFiles,
        CharacterSaved,
        CharacterView,
        EmbeddingStatusView,
        Explanation,
        FactDetail,
        FactView,
        FieldProblem,
        ForgetPreview,
        ForgetReceipt,
        ImportOutcome,
        ImportPreview,
        IndexStatusView,
        LoreBookSettings,
        LoreBookView,
        LoreEntryView,
        LoreFiredView,
        LoreLint,
        LoreTrial,
        PauseKind,
        PauseView,
        PendingQueue,
        PersonDossiers,
        PersonView,
        PlaceRef,
        Progress,
        RecalledFact,
        RememberOutcome,
        ScheduledForget,
        SourceMessage,
        TimedEffectView,
        TimelineDiff,
        TimelineExtent,
        TimelineFilters,
        TimelinePoint,
        TimelineSlice,
        TombstoneView,
        WorkersView,
    )


@dataclass(frozen=True, slots=True)
class StatusSnapshot:
    state: ConnectionState
    guilds: tuple[GuildInfo, ...]
    latency_ms: float | None
    last_error: str | None
    configured: bool  # a bot token and an LLM endpoint are both set
    missing: tuple[str, ...]  # what is still missing, in words ("bot token", "LLM endpoint")
    lore_problem: str | None = None  # why lorebook.toml is not in use (the last good book is), as last read
    state_detail: str = ""  # what was said with the state (why it failed), as the last ConnectionChanged said
    disk_full: str | None = None  # while the disk holding the familiar's files is full: what that means, one line


@dataclass(frozen=True, slots=True)
class TurnHit:
    turn_id: int
    where: str  # "guild:<id>/<channel id>", "dm:<user id>" or "local"
    place: PlaceRef  # the same place, by name ("Lantern Club #general")
    author: str  # display name
    content: str
    created_at: datetime
    score: float


@dataclass(frozen=True, slots=True)
class ChatLine:
    """One line of the local chat transcript."""

    turn_id: int
    author: str
    content: str
    from_familiar: bool
    created_at: datetime
    greeting: bool = False  # the familiar's greeting the chat opened with (no reply: nothing to explain)


@dataclass(frozen=True, slots=True)
class ChatCleared:
    """The local chat started afresh (`clear_local`): `messages` left it. Nothing was deleted; `restore_local`
    with this record brings them back. `before` / `after`: where the chat started, and starts now (turn
    anchors, for the restore)."""

    messages: int
    before: int
    after: int


class MemoryApi(Protocol):
    """What the familiar remembers, read and steered. Actions carry the revision seen; a stale one
    raises StaleRevisionError (with the fact as it is now), anything else refused a FamiliarError."""

    # reads
    async def pending(
        self, *, include_snoozed: bool = False, subject: str | None = None, limit: int = 200, with_related: bool = True
    ) -> PendingQueue: ...

    async def fact(self, fact_id: int, *, recorded_at: datetime | None = None) -> FactDetail:
        """The chain now, or (`recorded_at`) as it was recorded by then, each version as it stood then."""
        ...

    async def list_facts(
        self,
        *,
        status: str = "active",
        subject: str | None = None,
        world_at: datetime | None = None,
        recorded_at: datetime | None = None,
        limit: int = 200,
    ) -> list[FactView]: ...

    async def timeline(
        self,
        *,
        world_at: datetime | None = None,
        recorded_at: datetime | None = None,
        status: str = "all",
        subject: str | None = None,
        limit: int = 10_000,
        offset: int = 0,
        filters: TimelineFilters | None = None,
    ) -> TimelineSlice:
        """A page of the bi-temporal slice (`total` is its whole size), each fact with the status it had
        at `recorded_at`, forgotten ones as content-free markers in `rows`."""
        ...

    async def timeline_extent(self) -> TimelineExtent: ...

    async def timeline_diff(
        self,
        before: TimelinePoint,
        after: TimelinePoint,
        *,
        filters: TimelineFilters | None = None,
        limit: int = 500,
    ) -> TimelineDiff: ...

    async def sources(self, turn_ids: Sequence[int]) -> list[SourceMessage]: ...

    async def recall(self, query: str, where: str, limit: int = 10) -> list[RecalledFact]: ...

    async def places(self, keys: Sequence[str]) -> list[PlaceRef]:
        """These places by name, in this order (a place never seen by a readable form of its id)."""
        ...

    async def people(self, limit: int = 1000) -> list[PersonView]: ...

    async def dossiers(self, person_key: str) -> PersonDossiers: ...

    # decisions
    async def remember(
        self,
        text: str,
        where: str,
        *,
        subjects: tuple[str, ...] = (),
        fact_type: str = "semantic",
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        initiator: object | None = None,
    ) -> RememberOutcome: ...

    async def accept(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView: ...

    async def reject(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView: ...

    async def snooze(
        self, fact_id: int, revision: int, until: datetime | None = None, *, initiator: object | None = None
    ) -> FactView: ...

    async def archive(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView: ...

    async def edit(self, fact_id: int, revision: int, text: str, *, initiator: object | None = None) -> FactView: ...

    # reversals (undo)
    async def reopen(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView: ...

    async def unarchive(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView: ...

    async def restore_snooze(
        self, fact_id: int, revision: int, until: datetime | None, *, initiator: object | None = None
    ) -> FactView: ...

    async def revert_edit(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView: ...

    # forgetting
    async def forget_preview(self, fact_id: int, *, redact_sources: bool = False) -> ForgetPreview: ...

    async def forget(
        self,
        fact_id: int,
        *,
        revision: int | None = None,
        redact_sources: bool = False,
        initiator: object | None = None,
    ) -> ForgetReceipt: ...

    async def schedule_forget(
        self,
        fact_id: int,
        revision: int,
        *,
        redact_sources: bool = False,
        delay: float = ...,  # FORGET_UNDO_SECONDS
        initiator: object | None = None,
    ) -> ScheduledForget: ...

    async def cancel_forget(self, schedule_id: int, *, initiator: object | None = None) -> ScheduledForget: ...

    async def scheduled_forgets(self) -> list[ScheduledForget]: ...

    async def apply_due_forgets(self, *, own_too: bool = False) -> list[ForgetReceipt]: ...

    async def receipts(self, limit: int = 500) -> list[ForgetReceipt]: ...

    async def tombstones(self) -> list[TombstoneView]: ...

    async def lift_tombstone(self, tombstone_id: int, *, initiator: object | None = None) -> TombstoneView: ...

    async def restore_tombstone(self, tombstone_id: int, *, initiator: object | None = None) -> TombstoneView:
        """Undo a lift: the tombstone blocks again."""
        ...


class ControlsApi(Protocol):
    """Pause switches (learning, recall; everywhere, per server, per channel) and the memory workers."""

    async def state(self) -> PauseView: ...

    async def pause(self, kind: PauseKind, where: str = "*", *, initiator: object | None = None) -> PauseView: ...

    async def resume(self, kind: PauseKind, where: str = "*", *, initiator: object | None = None) -> PauseView: ...

    async def workers(self) -> WorkersView: ...


class IndexesApi(Protocol):
    """The search indexes: health, and a rebuild with progress; the embeddings: coverage, and a re-embed
    with progress. Cancel a rebuild or a re-embed by cancelling its task: what answered before answers
    exactly as before."""

    async def status(self) -> list[IndexStatusView]: ...

    async def tasks(self) -> list[BackgroundTaskView]:
        """The loops of this process that keep the indexes and the memory up to date, each running or not,
        and why one has stopped that should run (no I/O: cheap enough to ask every few seconds)."""
        ...

    async def rebuild(self, progress: Callable[[Progress], None] | None = None) -> dict[str, int]: ...

    async def catch_up(self, timeout: float = 60.0) -> None: ...

    async def embeddings(self) -> EmbeddingStatusView: ...

    async def reembed(
        self, progress: Callable[[Progress], None] | None = None, *, initiator: object | None = None
    ) -> int: ...


class SetupApi(Protocol):
    """Setting the familiar up (the welcome flow, Settings): values in force and their sources, checks of
    a bot token and of an LLM endpoint, saving (in force at once), a character card made into it."""

    async def current(self) -> SettingsView: ...

    async def check_discord(self, token: str | None = None) -> DiscordCheck:
        """None checks the token in force; an environment token is always the one checked."""
        ...

    async def list_models(self, draft: SettingsUpdate | None = None, which: Which = "replies") -> ModelList:
        """The models of the endpoint that would be used: the draft's values, unless the environment sets them."""
        ...

    async def test_endpoint(self, draft: SettingsUpdate | None = None, which: Which = "replies") -> str: ...

    async def save(self, update: SettingsUpdate) -> SettingsView:
        """Checked first (FamiliarError, nothing written), then in force at once everywhere."""
        ...

    async def preview_card(self, path: Path) -> CardPreview: ...

    async def apply_card(self, path: Path) -> CardApplied: ...


class LoreApi(Protocol):
    """The lorebook (lorebook.toml): load, edit and save it, lint it, try it, its timed effects, import and
    export. Failures are FamiliarError in one line; a save or an import against a revision the file no
    longer has is LoreConflictError (app.runtime.api.lore), with the revision the file has now."""

    @property
    def problem(self) -> str | None:
        """Why lorebook.toml is not the book in use (the last good one is), as last read; None when it is."""
        ...

    def check_key(self, key: str) -> str | None:
        """Why a key can never match (empty, an invalid or too long regex), None when it can: no I/O."""
        ...

    def count_tokens(self, text: str) -> int:
        """What a text costs in a prompt, as the lorebook's budget counts it: no I/O."""
        ...

    async def load(self) -> LoreBookView: ...

    async def save(
        self, entries: Sequence[LoreEntryView], base_revision: str, *, settings: LoreBookSettings | None = None
    ) -> LoreBookView:
        """The book becomes `entries`, in this order (those with a `ref` as loaded, edited or not; those left
        out removed; those without a ref added), and `settings`; only what changed is written."""
        ...

    async def lint(
        self, entries: Sequence[LoreEntryView] | None = None, *, settings: LoreBookSettings | None = None
    ) -> list[LoreLint]: ...

    async def try_text(
        self,
        texts: Sequence[str],
        *,
        seed: int | None = None,
        entries: Sequence[LoreEntryView] | None = None,
        settings: LoreBookSettings | None = None,
    ) -> LoreTrial: ...

    async def try_place(
        self,
        where: str,
        last: int = 20,
        *,
        seed: int | None = None,
        entries: Sequence[LoreEntryView] | None = None,
        settings: LoreBookSettings | None = None,
    ) -> LoreTrial: ...

    async def fired(self, days: float = 7.0) -> list[LoreFiredView]:
        """The entries of the book now that went into replies in the last `days` (how many, the newest),
        from the replies' kept explanations; entries that did not are left out."""
        ...

    async def timed(self, where: str | None = None) -> list[TimedEffectView]: ...

    async def clear_timed(
        self, where: str | None = None, key: str | None = None, *, initiator: object | None = None
    ) -> int: ...

    async def import_preview(
        self, file: Path, entries: Sequence[LoreEntryView] | None = None, *, base_revision: str | None = None
    ) -> ImportPreview:
        """What importing `file` would do, entry by entry, against the book on disk, or against `entries`
        (an editor's draft of the book loaded at `base_revision`): nothing is written. An item's `entry`
        carries what a save of the draft writes for it (the window's import is an edit of the draft)."""
        ...

    async def import_apply(
        self, file: Path, base_revision: str, *, take: Collection[int] | None = None
    ) -> ImportOutcome:
        """Import `file` into lorebook.toml at once (the command line's import)."""
        ...

    async def export(self, target: Path, fmt: str) -> int: ...

    async def revision(self) -> str:
        """The revision lorebook.toml has on disk now (as `load` gives it; "" when there is no file)."""
        ...


class CharacterApi(Protocol):
    """The character's files (character.toml and character.md), read, checked and saved. A save or a
    restore carries the revision loaded; when the files changed on disk since it raises
    CharacterChangedError and writes nothing. What is saved is in force from the next reply."""

    async def load(self) -> CharacterView: ...

    async def revision(self) -> str:
        """The files' revision now (to notice an edit on disk while they are being edited)."""
        ...

    def check(self, draft: CharacterDraft) -> tuple[FieldProblem, ...]:
        """Each field's problem in the settings loader's words, naming the key (no I/O)."""
        ...

    def count_tokens(self, text: str) -> int: ...

    async def save(self, draft: CharacterDraft, base_revision: str) -> CharacterSaved: ...

    async def restore(self, files: CharacterFiles, base_revision: str) -> CharacterView:
        """Put the texts a save replaced (CharacterSaved.before) back: its undo."""
        ...

    async def channels(self, home: Sequence[int] = ()) -> ChannelCatalog:
        """The servers and channels to choose home channels from, by name; `home` ids seen nowhere
        come back in `unseen`."""
        ...


class FamiliarFacade(Protocol):
    """Everything a pane or a CLI command can do. All I/O is async; `get_*` never does I/O."""

    @property
    def familiar_name(self) -> str:
        """The familiar's folder name (`--familiar NAME`): where a folder is meant."""
        ...

    @property
    def display_name(self) -> str:
        """The name the familiar goes by, as its settings say now (character.toml `familiar.display_name`,
        the Character pane's Name): what the window calls it. A settings save publishes SettingsReloaded."""
        ...

    @property
    def home(self) -> Path: ...

    @property
    def secrets_location(self) -> str:
        """Where the bot token and API key are kept, in words ("OS keyring", or the fallback file)."""
        ...

    @property
    def memory(self) -> MemoryApi: ...

    @property
    def controls(self) -> ControlsApi: ...

    @property
    def indexes(self) -> IndexesApi: ...

    @property
    def setup(self) -> SetupApi: ...

    @property
    def lore(self) -> LoreApi: ...

    @property
    def character(self) -> CharacterApi: ...

    async def explain(self, turn_id: int) -> Explanation:
        """What went into the reply that produced this turn; FamiliarError when it is not a reply."""
        ...

    async def newest_reply(self, place: str | None = None) -> int | None:
        """The turn id of the newest reply that has an explanation (in `place`, a place key, or anywhere)."""
        ...

    async def previous_explanation(self, turn_id: int) -> Explanation | None:
        """The explanation of the reply before this one in the same place (None: it is the first kept)."""
        ...

    async def answered_message(self, turn_id: int) -> SourceMessage | None:
        """The message the reply `turn_id` answered, as it stands now (None: not found)."""
        ...

    def subscribe(self, callback: Callable[[RuntimeEvent], None]) -> Callable[[], None]:
        """Call `callback` (on the event loop's thread) for every event; returns an unsubscribe."""
        ...

    def get_status(self) -> StatusSnapshot: ...

    async def start(self) -> None:
        """Connect to Discord. Failures are published as FailureReported and raised as FamiliarError."""
        ...

    async def stop(self) -> None: ...

    async def chat_local(self, text: str, *, greeting: str | None = None) -> ChatLine:
        """Send `text` in the window's local chat; returns the familiar's reply line.

        `greeting`: the greeting the chat was opened with (one of `local_greetings()`, as shown), stored as
        the familiar's first message before `text` when the chat is still empty (ignored when it is not).
        A reply that fails once `text` is stored raises ReplyFailedError, which carries the stored lines
        (`regenerate_local` on `said` answers it); a failure before (no endpoint yet, too long) is a plain
        FamiliarError and nothing is stored."""
        ...

    async def load_local_history(self, limit: int = 50) -> list[ChatLine]:
        """The local chat's last `limit` lines, oldest first (since it was last cleared)."""
        ...

    async def local_greetings(self) -> list[str]:
        """What an empty local chat opens with, as in SillyTavern: the greeting (character.toml
        `familiar.greeting`, a card's first message), then the card's alternate greetings (card.json), name
        macros expanded ({{char}}: the display name; {{user}}: "You"); [] when there is none."""
        ...

    async def regenerate_local(self, turn_id: int) -> ChatLine:
        """Answer the local chat's last message again; `turn_id` is the chat's last line, and the result the
        line that now stands for it.

        - The familiar's reply (regenerate): a new reply to the message it answered, stored as a new revision
          of it. Turns stay append-only: the replaced one is kept, marked superseded (out of the chat, of
          replies' context and of search; facts drawn from it are retired, as for an edited message), and
          the explanation ("Why did it say that") is the new reply's.
        - The owner's message whose reply failed (retry): its reply, as `chat_local` would have given it.

        FamiliarError when `turn_id` is no longer the chat's last line, or is the greeting."""
        ...

    async def clear_local(self) -> ChatCleared:
        """Start the local chat afresh: what was said leaves the chat and the familiar's recent conversation
        there. Nothing is deleted: the turns stay in its history (searchable) and in what it learned from
        them; Discord history and memory are untouched. `restore_local` undoes it."""
        ...

    async def restore_local(self, cleared: ChatCleared) -> int:
        """Undo `clear_local`: the messages it cleared are back in the chat (returns how many). FamiliarError,
        nothing changed, when the chat was cleared again since."""
        ...

    async def search_turns(self, query: str, limit: int = 20) -> list[TurnHit]: ...

    async def test_llm_endpoint(self) -> str:
        """Send a tiny request to the configured endpoint; returns a one-line result, raises FamiliarError."""
        ...

    async def diagnostics(self, extra_versions: Mapping[str, str] | None = None) -> str:
        """Versions, settings without secrets, index status and the last errors, as text for a bug report;
        never a token or a key. `extra_versions` adds what only the caller knows (Qt's version)."""
        ...
