"""View records: what the facade's sub-APIs return to the window and the CLI.

Frozen dataclasses in the runtime, so app/ui never needs app.memory types. Names are resolved
here, once: a subject is a `PersonRef` ("alice", not `discord:7001`), a place is a `PlaceRef`
("Lantern Club #general", "DM with alice", "Local chat"). Every record that can be acted on
carries the revision that was seen, which the action sends back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

FactStatus = Literal["pending", "active", "rejected", "archived", "forgotten"]
FactType = Literal["episodic", "semantic", "procedural"]
PauseKind = Literal["learning", "recall"]
IndexState = Literal["ok", "catching_up", "failing"]  # green / amber / red
EmbeddingState = Literal["ok", "catching_up", "failing", "off"]  # green / amber / red / grey
FORGET_UNDO_SECONDS = 10.0
"""How long a forget from the window can be undone before it is applied (the Undo notice stays as long)."""

JsonValue = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]


# -- names -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PersonRef:
    key: str  # canonical key: discord:<id>, familiar:self, local:owner
    name: str  # the last display name seen (the key itself if the person never spoke)


@dataclass(frozen=True, slots=True)
class PlaceRef:
    key: str  # guild:<id>, guild:<id>/<channel id>, dm:<user id>, local, familiar or quarantine
    name: str  # "Lantern Club #general", "DM with alice", "Local chat"...

    @property
    def parent(self) -> str | None:
        """The server a channel belongs to (guild:<id>), or None."""
        return self.key.split("/", 1)[0] if self.key.startswith("guild:") and "/" in self.key else None


# -- facts -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FactView:
    id: int
    content: str
    type: FactType
    importance: int  # 1-10
    confidence: float  # 0-1
    subjects: tuple[PersonRef, ...]
    speaker: PersonRef | None
    scope: PlaceRef  # where it may be recalled
    status: FactStatus  # in an as-of slice: the status it had then
    revision: int  # send it back with any action on this fact
    origin: str  # extraction, remember, edit, import, dreaming, supersede
    created_at: datetime  # recorded time: when the familiar started to believe it
    superseded_at: datetime | None  # recorded time it stopped (a newer version, or its source changed)
    superseded_by: int | None
    valid_from: datetime | None  # world time: when it held (None: open)
    valid_to: datetime | None
    snoozed_until: datetime | None
    source_turn_ids: tuple[int, ...] = ()

    @property
    def is_head(self) -> bool:
        return self.superseded_at is None

    def snoozed(self, now: datetime) -> bool:
        """A pending fact out of the queue until its snooze ends."""
        return self.status == "pending" and self.snoozed_until is not None and self.snoozed_until > now


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """A message a fact came from, as it stands now (a redacted one has no content)."""

    turn_id: int
    author: PersonRef  # the name as it was when the message was written
    place: PlaceRef
    content: str
    created_at: datetime
    redacted: bool


@dataclass(frozen=True, slots=True)
class DiffPiece:
    op: Literal["same", "added", "removed"]
    text: str  # words with their spacing; joining the "same" and "added" pieces gives the new text


@dataclass(frozen=True, slots=True)
class RelatedFact:
    """A current fact of the same subject and scope that a pending item would duplicate or supersede."""

    fact: FactView
    relation: Literal["duplicates", "may_supersede"]
    diff: tuple[DiffPiece, ...]  # word diff from this fact's text to the pending item's
    reason: str = ""  # why, in words: "nearly the same words", or the attribute both give ("where they live")


@dataclass(frozen=True, slots=True)
class PendingItem:
    """One row of the pending queue: everything triage shows."""

    fact: FactView
    sources: tuple[SourceMessage, ...]
    related: tuple[RelatedFact, ...]


@dataclass(frozen=True, slots=True)
class PendingQueue:
    items: tuple[PendingItem, ...]  # oldest first
    pending: int  # waiting now (not snoozed), shown or not
    snoozed: int  # pending facts whose snooze has not ended


@dataclass(frozen=True, slots=True)
class StatusChange:
    status: FactStatus
    at: datetime


@dataclass(frozen=True, slots=True)
class FactDetail:
    fact: FactView
    versions: tuple[FactView, ...]  # the whole chain, oldest first ("believed X from T1; corrected to Y at T2")
    head_id: int
    sources: tuple[SourceMessage, ...]  # of every version
    related: tuple[RelatedFact, ...]  # only for a pending fact
    status_history: Mapping[int, tuple[StatusChange, ...]] = field(default_factory=dict)  # per version, oldest first


@dataclass(frozen=True, slots=True)
class ForgottenFact:
    """A forgotten fact where it stood on the timeline: who it was about, where, and when; never what it
    said (the store erased that). The window shows it as "forgotten fact (bob, Lantern Club, 3 Nov)"."""

    id: int
    subjects: tuple[PersonRef, ...]  # from its forget receipt (none when no receipt was kept)
    scope: PlaceRef
    status: FactStatus  # the status it had at the slice's recorded time
    created_at: datetime
    superseded_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    forgotten_at: datetime | None
    receipt_id: int | None


TimelineRow = FactView | ForgottenFact


@dataclass(frozen=True, slots=True)
class TimelineFilters:
    """What a timeline slice keeps besides its two times; empty means any."""

    subjects: tuple[str, ...] = ()  # person keys: facts about any of them
    places: tuple[str, ...] = ()  # place keys: a server takes in its channels
    types: tuple[FactType, ...] = ()
    statuses: tuple[FactStatus, ...] = ()  # the status at the slice's recorded time
    text: str = ""  # a piece of the text, any case

    @property
    def any(self) -> bool:
        """Whether anything is filtered at all."""
        return bool(self.subjects or self.places or self.types or self.statuses or self.text.strip())


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """A point on the two time axes; None is "now"."""

    world_at: datetime | None = None
    recorded_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TimelineSlice:
    """The bi-temporal slice: what held in the world at `world_at`, as recorded by `recorded_at`."""

    world_at: datetime | None  # None: now
    recorded_at: datetime | None  # None: now
    facts: tuple[FactView, ...]  # newest first; each with the status it had at `recorded_at`
    total: int = 0  # rows in the whole slice (`rows` is the page from `offset`)
    offset: int = 0
    rows: tuple[TimelineRow, ...] = ()  # the page in display order (latest start first), forgotten ones as markers


@dataclass(frozen=True, slots=True)
class TimelineChange:
    kind: Literal["added", "removed", "changed"]
    before: TimelineRow | None  # at the first point, with its status there
    after: TimelineRow | None  # at the second point, with its status there
    diff: tuple[DiffPiece, ...] = ()  # the word diff when the text changed


@dataclass(frozen=True, slots=True)
class TimelineDiff:
    before: TimelinePoint
    after: TimelinePoint
    changes: tuple[TimelineChange, ...]  # in display order; at most the limit asked of each kind
    added: int  # the whole counts
    removed: int
    changed: int


@dataclass(frozen=True, slots=True)
class TimelineExtent:
    """What the timeline's axes and filters span."""

    facts: int  # fact rows (every version, every status)
    first_recorded: datetime | None
    first_world: datetime | None
    last_world: datetime | None  # may lie ahead (a fact valid until next month)
    people: tuple[PersonRef, ...]  # everyone a fact is about, by name
    places: tuple[PlaceRef, ...]  # every place a fact is kept for, by name


@dataclass(frozen=True, slots=True)
class RememberOutcome:
    outcome: Literal["inserted", "duplicate"]
    fact: FactView


@dataclass(frozen=True, slots=True)
class RecalledFact:
    fact: FactView
    score: float
    signals: Mapping[str, float | None]


# -- forgetting ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoreCount:
    store: str  # facts, fts/facts, fact_embeddings, people_dossiers, reflections, summaries, turns, fts/turns
    count: int


@dataclass(frozen=True, slots=True)
class ForgetPreview:
    fact_id: int
    versions: tuple[int, ...]  # every version that still holds text
    subjects: tuple[PersonRef, ...]
    scope: PlaceRef
    sources: tuple[SourceMessage, ...]  # erased too only with redact_sources
    redact_sources: bool
    stores: tuple[StoreCount, ...]


@dataclass(frozen=True, slots=True)
class ForgetReceipt:
    id: int | None  # the stored receipt (None when the forget had been applied already)
    fact_ids: tuple[int, ...]
    tombstone_id: int
    stores: tuple[tuple[str, int], ...]  # (store, rows or documents erased)
    redacted_turn_ids: tuple[int, ...]
    redacted_reply_ids: tuple[int, ...]  # the familiar's replies that quoted the redacted messages
    subjects: tuple[PersonRef, ...]
    scope: PlaceRef
    created_at: datetime
    # Where the erased words stand in each search index's files, by index name, once the forget
    # returns (empty for a receipt read back later, and for an index that held none of them).
    index_files: Mapping[str, IndexPurge] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IndexPurge:
    """Where removed documents' words stand in one index's files after a forget: "purged" here,
    "running" (the familiar running elsewhere purges them within seconds) or "pending" (the index is
    locked: they leave its files once the lock is gone; search already leaves them out)."""

    status: Literal["purged", "running", "pending"]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ScheduledForget:
    """A forget waiting out its undo window: the fact is already out of every read."""

    id: int
    fact_id: int
    due_at: datetime
    redact_sources: bool
    held_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TombstoneView:
    id: int
    hash: str  # keyed hash of the forgotten text and subjects; never the text
    reason: str
    created_at: datetime
    lifted_at: datetime | None
    label: str  # content-free and recognisable: "alice · Lantern Club · forgotten 2025-03-01"
    subjects: tuple[PersonRef, ...] = ()
    scope: PlaceRef | None = None
    receipt_id: int | None = None
    # False for a tombstone hashed with a key this machine does not hold (it came with an import
    # without its key, or the key was lost with the keyring): kept and listed, but it cannot block.
    can_block: bool = True


# -- people --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PersonView:
    person: PersonRef
    is_self: bool
    first_seen: datetime
    last_seen: datetime
    current_facts: int
    dossier_scopes: tuple[PlaceRef, ...]


@dataclass(frozen=True, slots=True)
class DossierView:
    scope: PlaceRef
    text: str | None  # None: no dossier written for this scope yet
    updated_at: datetime | None
    facts: tuple[FactView, ...]  # the current facts about the person in this scope, behind the dossier


@dataclass(frozen=True, slots=True)
class PersonDossiers:
    person: PersonRef
    dossiers: tuple[DossierView, ...]


# -- controls ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Switch:
    """A pause switch as it applies to one place: paused here, or inherited from its server or from
    'everywhere'."""

    paused: bool
    source: Literal["here", "server", "everywhere"] | None  # None when not paused


@dataclass(frozen=True, slots=True)
class PlaceSwitches:
    place: PlaceRef
    learning: Switch
    recall: Switch


@dataclass(frozen=True, slots=True)
class PauseView:
    learning: tuple[str, ...]  # the switches as set: "*" = everywhere, else place keys
    recall: tuple[str, ...]
    places: tuple[PlaceSwitches, ...]  # every known place, servers before their channels

    @property
    def anything_paused(self) -> bool:
        return bool(self.learning or self.recall)

    def paused(self, kind: PauseKind, place: str) -> bool:
        chosen = self.learning if kind == "learning" else self.recall
        return "*" in chosen or place in chosen or place.split("/", 1)[0] in chosen

    def switch(self, kind: PauseKind, place: str) -> Switch:
        """How `kind` stands at `place`: paused there, by its server's switch, everywhere, or not."""
        chosen = self.learning if kind == "learning" else self.recall
        if place in chosen:
            return Switch(True, "here")
        server = place.split("/", 1)[0]
        if server != place and server in chosen:
            return Switch(True, "server")
        if "*" in chosen:
            return Switch(True, "everywhere")
        return Switch(False, None)


@dataclass(frozen=True, slots=True)
class FailedWork:
    id: int
    kind: str
    turn_id: int
    place: str | None
    attempts: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class WorkersView:
    projectors: tuple[str, ...]
    pause: PauseView
    queued: int
    failed: tuple[FailedWork, ...]


# -- indexes -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IndexStatusView:
    """One search index's health, its backlog counted in SQL now (whichever process writes it)."""

    name: str
    state: IndexState
    commits: int
    documents_committed: int
    retries: int
    live_attempt: int  # 0 unless a commit is being retried now
    failures: int
    last_error: str | None
    pending: int  # documents SQL has that the index does not yet (to add + to remove)
    lag: int  # rows the index's watermark is behind SQL's newest
    watermark: int
    rebuilt_at_start: bool
    awaiting_purge: int  # removed documents whose words stay in the files until the next compaction
    to_add: int
    to_remove: int
    health_state: (
        str  # the index itself: "ready", "locked", "rebuilding", "reader" (another process writes it), "closed"
    )
    locked_attempts: int  # while locked: how many times opening it has been tried
    state_line: str  # the state in a few words, e.g. "locked, retrying (attempt 3), last error: ..."
    indexed: int | None = None  # documents the index holds now (None: it cannot be read now)
    source_rows: int | None = None  # documents SQL has for it: what it holds once caught up
    backlog_since: datetime | None = None  # the oldest change it lacks is at most this old (None: caught up)
    last_commit_at: datetime | None = None  # when a commit last landed
    size_bytes: int | None = None  # its files on disk (a rebuild's folder beside it included)
    # The last time a lock or a refused file (the antivirus race) held commits up, then let go:
    recovered_after: int = 0  # how many tries it refused before one landed
    recovered_at: datetime | None = None  # when one landed
    written_here: bool = True  # this process writes the index (False: another Familiar process does)
    disk_full: bool = False  # the disk holding it is full: it takes no new document until there is room


@dataclass(frozen=True, slots=True)
class BackgroundTaskView:
    """One of the loops of this process that keep the indexes and the memory up to date (the index
    committers, the memory workers, the change poll, the lorebook watcher, the deferred forgets)."""

    name: str  # its task's name, e.g. "index-committer-turns"
    what: str  # in words, e.g. "the messages index committer"
    running: bool
    problem: str | None  # why it does not run although it should ("stopped: ..."); None when all is well


@dataclass(frozen=True, slots=True)
class EmbeddingModelView:
    """The vectors one embedding model left in history.db."""

    model: str  # e.g. "hash:256", "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    vectors: int
    current: int  # how many current facts they cover
    size_bytes: int
    last_written_at: datetime | None
    active: bool  # the model the settings use now: the only one reads use
    reembedding: bool = False  # the new vectors of a re-embed that is running or was interrupted


@dataclass(frozen=True, slots=True)
class EmbeddingStatusView:
    """The fact_embeddings side-index: coverage of the active model, and every model's vectors."""

    backend: str  # off / hash / fastembed
    model: str | None  # the active embedder's name; None when embeddings are off
    state: EmbeddingState
    state_line: str  # the state in a few words
    worker_enabled: bool  # the fact_embedding worker is among [providers.memory] projectors
    facts: int  # current facts (what the active model should cover)
    covered: int  # of them, those with a vector of the active model
    oldest_missing_at: datetime | None  # when the oldest fact still without a vector was recorded
    last_written_at: datetime | None  # when a vector of the active model was last written
    size_bytes: int  # every model's vectors in history.db
    unused_vectors: int  # vectors of models reads do not use (a model mismatch after a backend change)
    models: tuple[EmbeddingModelView, ...]

    @property
    def missing(self) -> int:
        return self.facts - self.covered if self.model is not None else 0

    @property
    def coverage(self) -> float | None:
        """Covered share of current facts (None when off; 1.0 with no facts)."""
        if self.model is None:
            return None
        return 1.0 if self.facts == 0 else self.covered / self.facts


@dataclass(frozen=True, slots=True)
class Progress:
    """Progress of long work, the one type the window shows: `total` None when it cannot be known."""

    label: str
    done: int
    total: int | None

    @property
    def fraction(self) -> float | None:
        if self.total is None:
            return None
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)


# -- explanations --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExplainedLayer:
    name: str
    tokens: int
    budget: int
    cached: bool
    note: str = ""


@dataclass(frozen=True, slots=True)
class LoreSpan:
    """Where a lorebook key matched, as offsets (the explanation keeps no message text): in a recent
    message's content or its author's name (`turn_id`; `position` counts the scanned messages from the
    oldest, from 0), or in the content of an entry activated before it (`entry`, 0-based: recursion)."""

    source: Literal["message", "author", "lore", "text"]  # "text": a text tried that is no stored message
    start: int
    end: int
    turn_id: int | None = None
    entry: int | None = None
    position: int | None = None


@dataclass(frozen=True, slots=True)
class ExplainedLore:
    index: int  # 0-based; people count entries from 1
    title: str
    key: str  # the key that fired, or "(constant)", "(sticky)", "(@@activate)"
    secondary: str | None
    priority: int
    tokens: int
    via: Literal["key", "constant", "sticky", "decorator"] = "key"
    step: int = 0  # 0: the conversation; 1...: recursion steps (activated by entries of the step before)
    span: LoreSpan | None = None
    roll: float | None = None  # the probability roll (0-100) it passed, when it had one


@dataclass(frozen=True, slots=True)
class ExplainedLoreDrop:
    """A lorebook entry that matched but was not used, and why: budget, entry cap, probability, group,
    cooldown, delay, disabled, recursion or decorator (`detail` says it in words)."""

    index: int
    title: str
    key: str
    reason: str
    detail: str
    step: int = 0
    span: LoreSpan | None = None


@dataclass(frozen=True, slots=True)
class ExplainedFact:
    fact_id: int
    score: float
    signals: Mapping[str, float | None]
    content: str  # looked up now: "(forgotten)" once forgotten
    status: str


@dataclass(frozen=True, slots=True)
class ExplainedTurn:
    turn_id: int
    score: float
    signals: Mapping[str, float | None]


@dataclass(frozen=True, slots=True)
class ExplainedDrop:
    layer: str
    reason: str  # "budget", "entry cap"...
    details: Mapping[str, JsonValue]  # what was dropped (ids, titles, keys, scores), never message text


# -- the lorebook --------------------------------------------------------------------------------------------
LoreLogic = Literal["and_any", "and_all", "not_any", "not_all"]
LoreLintKind = Literal["invalid_key", "inner_word", "shared_key", "never_fires"]
ImportAction = Literal["added", "changed", "unchanged"]
LoreFormat = Literal["st", "ccv2", "ccv3"]


@dataclass(frozen=True, slots=True)
class LoreEntryView:
    """One lorebook entry as the editor shows and edits it: every field the engine acts on.

    `ref` is the entry's place in the book as loaded (0-based): what a save matches it by, so leave it as
    it is on an edited copy (`dataclasses.replace`) and set None on a new entry. `tokens` is derived (the
    content's cost) and ignored by a save. Whatever else the file holds for the entry (its [extensions],
    comments) is kept by a save; `decorators` are its CCv3 `@@` lines (extensions.decorators)."""

    ref: int | None = None
    title: str = ""
    keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    logic: LoreLogic = "and_any"
    content: str = ""
    priority: int = 100
    constant: bool = False
    enabled: bool = True
    case_sensitive: bool | None = None  # None: the book's setting
    whole_words: bool | None = None
    scan_depth: int | None = None
    probability: int = 100
    use_probability: bool = True
    group: str = ""  # inclusion groups, comma-separated
    group_override: bool = False
    group_weight: int = 100
    use_group_scoring: bool | None = None
    sticky: int = 0
    cooldown: int = 0
    delay: int = 0
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: int = 0  # a recursion level (0: off)
    decorators: tuple[str, ...] = ()
    id: int | str | None = None
    tokens: int = 0
    # An entry taken from an import (ImportItem.entry) and not saved yet: the fields it came with, as
    # lorebook.toml will hold them (its extensions included), as JSON. A save writes them, with the edits
    # made to the entry since; None for an entry read from lorebook.toml or written in the editor.
    imported: str | None = None

    @property
    def position(self) -> int | None:
        """1-based, as people count entries (None for a new one)."""
        return None if self.ref is None else self.ref + 1


@dataclass(frozen=True, slots=True)
class LoreBookSettings:
    """The book-wide fields of lorebook.toml."""

    name: str = ""
    description: str = ""
    scan_depth: int = 10
    case_sensitive: bool = False
    whole_words: bool = True
    token_budget: int | None = None
    max_entries: int | None = None
    recursive_scanning: bool = True
    max_recursion_steps: int = 3
    use_group_scoring: bool = False


@dataclass(frozen=True, slots=True)
class LoreProblemView:
    """A key that never matches, or a decorator line that cannot be read (the rest of the book works)."""

    entry: int  # 0-based
    title: str
    key: str
    message: str
    line: str  # all of it in one line, naming the entry as people count them


@dataclass(frozen=True, slots=True)
class LoreBookView:
    """lorebook.toml as loaded: its entries, and the revision to send back with a save."""

    path: str
    revision: str  # "<sha256 of the file>:<its mtime in ns>" ("" when there is no file yet)
    settings: LoreBookSettings
    entries: tuple[LoreEntryView, ...]
    problems: tuple[LoreProblemView, ...]
    budget: int  # the lorebook's token budget in force (the default tier's, lowered by the book's own)
    max_entries_in_force: int
    constant_tokens: int  # what the enabled constant entries cost together (they go into every reply)
    total_tokens: int  # what every enabled entry costs together (if all fired)


@dataclass(frozen=True, slots=True)
class LoreLint:
    """Something in an entry that likely does not do what its author meant."""

    entry: int  # 0-based
    title: str
    kind: LoreLintKind
    key: str | None
    message: str
    others: tuple[int, ...] = ()  # shared_key: the other entries using the key


@dataclass(frozen=True, slots=True)
class LoreTrial:
    """What the lorebook would put in a reply for these texts: run through the engine the bot uses."""

    texts: tuple[str, ...]  # as scanned, oldest first ("name: content" for stored messages)
    turn_ids: tuple[int | None, ...]  # the message of each text (None: a text typed in)
    fired: tuple[ExplainedLore, ...]  # what goes in, in order; spans in `texts` (source "text") or messages
    dropped: tuple[ExplainedLoreDrop, ...]  # what matched and was left out, with why
    steps: tuple[tuple[int, ...], ...]  # entry indexes per step: the recursion chain
    seed: int
    clock: int  # the message number the timed effects and delays were judged at
    block: str  # the lorebook block as the prompt would get it
    tokens: int
    budget: int
    problems: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LoreFiredView:
    """How often an entry of the book went into replies lately (read from the replies' explanations)."""

    entry: int  # 0-based, in the book now
    title: str
    replies: int  # replies it went into since `days` ago
    last: datetime  # the newest of them


@dataclass(frozen=True, slots=True)
class TimedEffectView:
    """A sticky or cooldown effect of an entry in a place (in the place's message numbers)."""

    place: PlaceRef
    key: str  # what the effect is tied to (a hash of the entry's title, keys and content): `clear_timed` takes it
    entry: int | None  # the entry's 0-based index in the book now (None: it was edited or removed since)
    title: str
    kind: Literal["sticky", "cooldown"]
    start: int  # active after this message...
    end: int | None  # ...up to this one (None: for good)


@dataclass(frozen=True, slots=True)
class ImportItem:
    number: int  # 0-based place in the imported file
    action: ImportAction  # against the book now: new, a new version of an entry it has, or one it has as is
    entry: LoreEntryView  # as it would be written (ref None, `imported` set)
    existing: int | None  # the entry it matches (changed, unchanged), 0-based, among those it was compared with
    changed_fields: tuple[str, ...]  # changed: which fields differ


@dataclass(frozen=True, slots=True)
class ImportPreview:
    file: str
    format: LoreFormat
    source: str  # what the file is, in words
    revision: str  # the book's revision on disk when the preview was made (send it back with apply)
    items: tuple[ImportItem, ...]

    def count(self, action: ImportAction) -> int:
        return sum(item.action == action for item in self.items)


@dataclass(frozen=True, slots=True)
class ImportOutcome:
    added: int
    updated: int
    skipped: int  # unchanged, or not taken
    book: LoreBookView


@dataclass(frozen=True, slots=True)
class Explanation:
    """What went into one reply: its layers with their token costs, the lore that fired and on which key,
    the facts and older messages recalled with their scores, and what the budget left out."""

    turn_id: int
    explanation_id: int
    place: PlaceRef
    created_at: datetime
    tier: str
    recall_paused: bool
    assembly_ms: float
    layers: tuple[ExplainedLayer, ...]
    lore: tuple[ExplainedLore, ...]
    facts: tuple[ExplainedFact, ...]
    turns: tuple[ExplainedTurn, ...]
    dropped: tuple[ExplainedDrop, ...]
    lore_dropped: tuple[ExplainedLoreDrop, ...] = ()  # every entry that matched and was not used, with why
    lore_seed: int | None = None  # the seed of the activation's RNG (None: recorded before there was one)
    lore_clock: int | None = None  # the number of the message answered in its place
    lore_steps: tuple[tuple[int, ...], ...] = ()  # entry indexes activated per step: the recursion chain


# -- the character -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CharacterDraft:
    """The character as the editor holds it: persona (character.md) and the settings of character.toml
    it edits. A number may be given as the text typed ("0.7", "1e-1", "abc"): it is read as a TOML
    value would be, and what is not a number is refused with the loader's message."""

    display_name: str
    persona: str
    greeting: str
    home_channels: tuple[int, ...]
    allow_dms: bool
    respond_to_bots: bool
    model: str
    temperature: float | str
    max_tokens: int | str
    budget_tier: str


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """What is wrong with one field of a draft, in the loader's words (naming the settings key)."""

    field: str  # the CharacterDraft field, e.g. "temperature"
    key: str  # the character.toml key, e.g. "llm.temperature"
    message: str  # e.g. "key 'llm.temperature': 7.0 is out of range (0 to 2)"


@dataclass(frozen=True, slots=True)
class SettingOverride:
    """A setting the environment overrides: the file's value is edited, this one is in force."""

    field: str
    variable: str  # e.g. FAMILIAR_LLM_MODEL
    value: str


@dataclass(frozen=True, slots=True)
class CharacterView:
    """The character as its files hold it now, with the revision to save against."""

    draft: CharacterDraft
    revision: str  # of character.toml and character.md together; a save sends it back
    folder: Path  # the familiar's data folder (character.toml, character.md, lorebook.toml...)
    persona_budgets: Mapping[str, int]  # budget tier -> tokens for the persona ([budget.<tier>] character_tokens)
    overrides: tuple[SettingOverride, ...] = ()


@dataclass(frozen=True, slots=True)
class CharacterFiles:
    """The text of character.toml and character.md (what an undo of a save puts back)."""

    toml: str
    persona: str


@dataclass(frozen=True, slots=True)
class CharacterSaved:
    view: CharacterView  # as saved (and in force from the next reply)
    before: CharacterFiles
    after: CharacterFiles


@dataclass(frozen=True, slots=True)
class ChannelChoice:
    """A channel that can be a home channel, by name."""

    channel_id: int
    name: str  # "#general", or "channel 123 (not seen)"
    place: PlaceRef | None  # guild:<id>/<channel id>, "Lantern Club #general"; None when never seen
    live: bool  # in the connected bot's server list now (else known from what it heard before)


@dataclass(frozen=True, slots=True)
class ServerChoice:
    server: PlaceRef  # guild:<id>, "Lantern Club"
    channels: tuple[ChannelChoice, ...]
    live: bool


@dataclass(frozen=True, slots=True)
class ChannelCatalog:
    """The servers and channels the familiar sees (the connected bot's list, and every place it has heard
    in), and home channel ids seen nowhere."""

    servers: tuple[ServerChoice, ...]
    unseen: tuple[ChannelChoice, ...]
    connected: bool
