"""A realistic familiar for the benchmarks that run the whole runtime (bench_context, bench_projector).

`build()` makes a familiar folder (app.config.paths.FamiliarPaths + ensure_familiar under a temp root)
holding, by default, 100k turns over 20 places (16 guild channels, 3 DMs, the local chat), 10k facts
(mostly active; a few pending ones), a 500-entry lorebook, a summary per place, reflections and the
dossiers of everyone with facts, with both indexes caught up. Everything comes from one seeded RNG,
so two runs build the same world. `World.turns()` then writes the conversation that follows.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.config.paths import FamiliarPaths, ensure_familiar
from app.config.secrets import SecretStore
from app.memory.facts import NewFact
from app.memory.records import OWNER_KEY, SELF_KEY, NewTurn
from app.runtime.service import Familiar

SELF_NAME = "Wisp"
PROJECTORS = ("rich_note", "rolling_summary", "reflection", "people_dossier", "fact_supersede")

COMMON = (
    "the", "a", "and", "to", "of", "i", "you", "it", "is", "was", "that", "in", "on", "with", "for", "but",
    "we", "so", "just", "what", "do", "have", "my", "your", "this", "not", "be", "are", "at", "if", "like",
    "about", "they", "there", "when", "can", "all", "no", "yes", "then", "too", "really", "think", "know",
    "go", "get", "got", "going", "one", "out", "up", "time", "today", "yesterday", "tomorrow", "night",
    "lol", "ok", "maybe", "still", "again", "some", "more", "how", "why", "who", "where", "did", "had",
)  # fmt: skip
TOPICS = (
    "tea", "lantern", "river", "ember", "moon", "owl", "map", "harbor", "quill", "storm", "gate", "tower",
    "sword", "bread", "market", "song", "shadow", "garden", "bridge", "coin", "letter", "candle", "winter",
    "game", "raid", "boss", "patch", "server", "stream", "movie", "book", "chapter", "exam", "train", "bus",
    "coffee", "pizza", "ramen", "cat", "dog", "guitar", "piano", "drums", "concert", "album", "playlist",
    "weekend", "holiday", "trip", "beach", "mountain", "hike", "bike", "run", "marathon", "gym", "class",
    "homework", "project", "deadline", "meeting", "office", "job", "interview", "apartment", "rent", "plant",
    "recipe", "cake", "soup", "garden", "rain", "snow", "sun", "phone", "laptop", "keyboard", "mouse",
    "painting", "sketch", "poem", "story", "dream", "puzzle", "chess", "cards", "dice", "campaign", "quest",
    "dungeon", "dragon", "wizard", "potion", "spell", "armor", "shield", "bow", "arrow", "forge", "anvil",
)  # fmt: skip
SYLLABLES = ("ka", "ri", "mo", "then", "dor", "el", "wyn", "sha", "lo", "vex", "ar", "um", "bri", "tal", "os", "nim")
FIRST = (
    "Alice", "Bob", "Carol", "Dmitri", "Eve", "Farah", "Gus", "Hana", "Ivo", "June", "Kai", "Lena", "Milo",
    "Nora", "Otto", "Pia", "Quin", "Rosa", "Sami", "Tess", "Umar", "Vera", "Wren", "Xavi", "Yuki", "Zane",
)  # fmt: skip
LOGICS = ("and_any", "and_all", "not_any", "not_all")
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Samples:
    """Wall-clock and process CPU milliseconds of a repeated measurement. The CPU figure counts every
    thread of the process (SQLite, tantivy), so on a busy machine it shows the work without the waiting."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.wall.append((time.perf_counter() - wall) * 1000)
        self.cpu.append((time.process_time() - cpu) * 1000)

    def add(self, wall: float, cpu: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)

    HEADER = f"{'p50':>8} {'p95':>8} {'max':>8} {'mean':>8} {'cpu p50':>8} {'cpu p95':>8}  (ms)"

    def cells(self) -> str:
        w, c = self.wall, self.cpu
        return (
            f"{pct(w, 0.5):8.2f} {pct(w, 0.95):8.2f} {max(w):8.2f} {statistics.fmean(w):8.2f}"
            f" {pct(c, 0.5):8.2f} {pct(c, 0.95):8.2f}"
        )


@dataclass(frozen=True, slots=True)
class Place:
    key: str
    platform: str
    guild_id: int | None
    channel_id: int
    regulars: tuple[tuple[str, str], ...]  # (canonical key, display name)


@dataclass
class World:
    """The invented community: people, places, vocabulary, lore names, and the conversation's clock."""

    seed: int = 7
    rng: random.Random = field(init=False)
    people: list[tuple[str, str]] = field(init=False)
    places: list[Place] = field(init=False)
    lore: list[str] = field(init=False)
    _words: list[str] = field(init=False)
    _cum: list[float] = field(init=False)
    _message_ids: itertools.count[int] = field(init=False)

    def __post_init__(self) -> None:
        self.rng = rng = random.Random(self.seed)
        names = [f"{first}{'' if n == 0 else n}" for n in range(12) for first in FIRST]
        self.people = [(f"discord:{100_000 + i}", names[i]) for i in range(300)]
        invented = sorted({self._invent() for _ in range(4000)})
        rng.shuffle(invented)
        self.lore = invented[:500]
        # Zipf-like vocabulary: chat words first, then topics, then the long tail of invented words.
        self._words = [*COMMON, *TOPICS, *invented[500:]]
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(self._words))]
        self._cum = list(itertools.accumulate(weights))
        places: list[Place] = []
        for guild in (1000, 2000):
            for channel in range(1, 9):
                regulars = tuple(rng.sample(self.people, rng.randint(8, 25)))
                places.append(Place(f"guild:{guild}/{guild + channel}", "discord", guild, guild + channel, regulars))
        for key, name in self.people[:3]:
            user = key.split(":")[1]
            places.append(Place(f"dm:{user}", "discord", None, 900_000 + int(user), ((key, name),)))
        places.append(Place("local", "local", None, 0, ((OWNER_KEY, "You"),)))
        self.places = places
        self._message_ids = itertools.count(5_000_000_000)

    def _invent(self) -> str:
        return "".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 4)))

    def words(self, count: int) -> list[str]:
        total = self._cum[-1]
        return [self._words[bisect.bisect(self._cum, self.rng.random() * total)] for _ in range(count)]

    def sentence(self, low: int = 4, high: int = 30) -> str:
        words = self.words(self.rng.randint(low, high))
        if self.rng.random() < 0.25:  # a quarter of the messages name something of the lore
            words.insert(self.rng.randrange(len(words) + 1), self.rng.choice(self.lore).capitalize())
        text = " ".join(words)
        return text[0].upper() + text[1:] + self.rng.choice((".", "!", "?", "", "..."))

    def turns(self, place: Place, count: int, start: datetime, step: timedelta, replies: float = 0.3) -> list[NewTurn]:
        """`count` turns of a conversation at `place`; a share `replies` of them are the familiar's."""
        out: list[NewTurn] = []
        for n in range(count):
            if self.rng.random() < replies:
                key, name = SELF_KEY, SELF_NAME
            else:
                key, name = self.rng.choice(place.regulars)
            discord = place.platform == "discord"
            out.append(
                NewTurn(
                    platform=place.platform,
                    place=place.key,
                    guild_id=place.guild_id,
                    channel_id=place.channel_id,
                    message_id=next(self._message_ids) if discord else None,
                    author_key=key,
                    author_name=name,
                    content=self.sentence(),
                    created_at=start + step * n,
                )
            )
        return out

    def fact_text(self, name: str) -> str:
        r = self.rng
        t1, t2 = r.choice(TOPICS), r.choice(TOPICS)
        lore = r.choice(self.lore).capitalize()
        day = (T0 + timedelta(days=r.randrange(400))).date().isoformat()
        return r.choice(
            (
                f"{name} likes {t1} and {t2}.",
                f"{name} has a {t1} named {lore}.",
                f"{name} went to {lore} for the {t1} on {day}.",
                f"{name} prefers {t1} over {t2} in the evening.",
                f"{name} is learning the {t1} with help from {lore}.",
                f"{name} finished the {t1} {t2} project on {day}.",
                f"{name} keeps a {t1} next to the {t2} at home.",
                f"To fix the {t1} {name} first cleans the {t2}, then asks {lore}.",
                f"{name} and {lore} share a {t1} on weekends.",
            )
        )


# -- files ------------------------------------------------------------------------------------------
def write_character(paths: FamiliarPaths, llm_url: str, extra: str = "") -> None:
    """character.toml as tests/conftest.py writes it (no Discord fake: the bot is never started)."""
    ensure_familiar(paths)
    paths.character_toml.write_text(
        f"""# bench familiar
[familiar]
display_name = "{SELF_NAME}"

[discord]
home_channels = []

[llm]
base_url = "{llm_url}"
model = "bench-model"
timeout = 10.0
max_retries = 0
{extra}
""",
        encoding="utf-8",
    )


def _toml(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON strings and arrays of strings are valid TOML


def lorebook_text(world: World, count: int = 500) -> str:
    """`count` entries: plain keys (single and multi-word), a few regex keys, a fifth with secondary keys
    under each logic, a tenth constant, some substring or case-sensitive keys and per-entry scan depths."""
    rng = random.Random(world.seed + 1)
    lines = ['name = "Bench lore"', "scan_depth = 10", ""]
    for i in range(count):
        name = world.lore[i].capitalize()
        keys = [name]
        if i % 3 == 0:
            keys.append(f"{rng.choice(TOPICS)} of {name}")
        if i % 25 == 4:
            keys.append(f"/{name[:3].lower()}\\w*(?:s|es)?/i")
        body = " ".join(world.words(rng.randint(25, 70)))
        lines += ["[[entries]]", f"title = {_toml(name)}", f"keys = {_toml(keys)}"]
        if i % 5 == 2:
            lines += [f"secondary_keys = {_toml(rng.sample(TOPICS, 2))}", f"logic = {_toml(LOGICS[i % 4])}"]
        if i % 10 == 0:
            lines.append("constant = true")
        if i % 17 == 3:
            lines.append("whole_words = false")
        if i % 29 == 5:
            lines.append("case_sensitive = true")
        if i % 7 == 6:
            lines.append(f"scan_depth = {rng.randint(2, 20)}")
        lines += [f"priority = {rng.randint(1, 200)}", f"content = {_toml(f'{name}: {body}.')}", ""]
    return "\n".join(lines)


# -- the store --------------------------------------------------------------------------------------
@dataclass
class Built:
    paths: FamiliarPaths
    world: World
    turn_ids: dict[str, list[int]]  # place -> its turn ids, oldest first
    facts: int
    pending: int
    dossiers: int
    seconds: float


def secret_store(paths: FamiliarPaths) -> SecretStore:
    return SecretStore(paths.name, paths.secrets_file, use_keyring=False)


async def open_familiar(paths: FamiliarPaths) -> Familiar:
    return await Familiar.open(paths, secret_store(paths), env={})


async def build(
    root: Path,
    *,
    turns: int = 100_000,
    facts: int = 10_000,
    lore_entries: int = 500,
    llm_url: str = "http://127.0.0.1:9/v1",
    extra: str = "",
    seed: int = 7,
) -> Built:
    """Build the familiar under `root` (FAMILIAR_HOME-like) and close it; the caller opens it again."""
    started = time.perf_counter()
    world = World(seed)
    paths = FamiliarPaths(root=root, name="bench")
    ensure_familiar(paths)
    write_character(paths, llm_url, extra)
    paths.lorebook_toml.write_text(lorebook_text(world, lore_entries), encoding="utf-8")
    familiar = await open_familiar(paths)
    try:
        history = familiar.history
        # Turns: the places take turns in bursts of 50, like conversations do, 100 s apart.
        step = timedelta(seconds=100)
        turn_ids: dict[str, list[int]] = {p.key: [] for p in world.places}
        weights = [4 if p.platform == "discord" and p.guild_id else 2 for p in world.places]
        clock = T0
        pending_turns: list[NewTurn] = []
        made = 0
        while made < turns:
            place = world.rng.choices(world.places, weights)[0]
            burst = world.turns(place, min(50, turns - made), clock, step)
            clock += step * len(burst)
            pending_turns += burst
            made += len(burst)
            if len(pending_turns) >= 5000 or made >= turns:
                ids = await history.append_turns(pending_turns)
                for new, turn_id in zip(pending_turns, ids, strict=True):
                    turn_ids[new.place].append(turn_id)
                pending_turns = []

        # Facts: mostly the owner's or imported (active), some extracted (auto-promoted), a few pending.
        rng = world.rng
        inserted = pending = 0
        pairs: dict[tuple[str, str], int] = {}
        scoped = [p for p in world.places if p.key != "local"]
        while inserted < facts:
            place = rng.choice(scoped) if rng.random() < 0.95 else world.places[-1]
            key, name = rng.choice(place.regulars)
            where = place.key
            if rng.random() < 0.03:
                key, name, where = SELF_KEY, SELF_NAME, "familiar"
            roll = rng.random()
            sources = tuple(rng.sample(turn_ids[place.key], 1)) if turn_ids[place.key] else ()
            if roll < 0.80:
                new = NewFact(
                    content=world.fact_text(name),
                    type=rng.choice(("semantic", "semantic", "episodic", "procedural")),
                    importance=rng.randint(1, 10),
                    confidence=1.0,
                    subjects=(key,),
                    place=where,
                    speaker=OWNER_KEY,
                    origin="import",
                )
            else:  # extracted: episodic 0.9 auto-promotes; a semantic 0.6 waits for the owner
                episodic = roll < 0.95
                new = NewFact(
                    content=world.fact_text(name),
                    type="episodic" if episodic else "semantic",
                    importance=rng.randint(1, 10),
                    confidence=0.9 if episodic else 0.6,
                    subjects=(key,),
                    place=where,
                    speaker=key,
                    source_turn_ids=sources,
                    origin="extraction",
                )
            outcome = await history.insert_fact(new)
            if outcome.outcome != "inserted" or outcome.fact is None:
                continue
            inserted += 1
            if outcome.fact.status == "active":
                pairs[(key, outcome.fact.scope)] = outcome.fact.id
            else:
                pending += 1

        # Projections: a summary per place, a dozen reflections per place, a dossier per person and scope.
        projections = familiar.projections
        fact_rows = await history.store.read_all("SELECT id, scope FROM facts WHERE status = 'active'")
        by_scope: dict[str, list[int]] = {}
        for fact_id, scope in fact_rows:
            by_scope.setdefault(str(scope), []).append(int(fact_id))
        last_fact = max(int(r[0]) for r in fact_rows)
        for place in world.places:
            ids = turn_ids[place.key]
            if not ids:
                continue
            summary = " ".join(world.words(110))
            await projections.save_summary(place.key, summary, ids[-1], watermark_name="rolling_summary")
            scope = place.key.split("/", 1)[0]
            facts_here = by_scope.get(scope, []) or [last_fact]
            for _ in range(3):
                items = [
                    (
                        " ".join(world.words(rng.randint(15, 35))),
                        rng.sample(ids[-200:], min(3, len(ids))),
                        rng.sample(facts_here, min(2, len(facts_here))),
                    )
                    for _ in range(4)
                ]
                await projections.add_reflections(
                    place.key, items, last_turn_id=ids[-1], last_fact_id=last_fact, watermark_name="reflection"
                )
        for (key, scope), fact_id in pairs.items():
            await projections.save_dossier(key, scope, " ".join(world.words(rng.randint(30, 70))), fact_id)
        await history.catch_up(300)
    finally:
        await familiar.close()
    return Built(paths, world, turn_ids, inserted, pending, len(pairs), time.perf_counter() - started)


async def settle_watermarks(familiar: Familiar, names: Sequence[str] = PROJECTORS) -> None:
    """Put every projector's watermarks at the newest turn / status-log row, as a caught-up familiar has them."""
    store = familiar.history.store
    marks = familiar.projector_deps.marks
    newest = await store.max_turn_id()
    per_place = await store.read_all("SELECT place, MAX(id) FROM turns GROUP BY place")
    log = await store.read_one("SELECT COALESCE(MAX(rowid), 0) FROM fact_status_log")
    log_top = int(log[0]) if log else 0
    for name in names:
        if name in ("people_dossier", "fact_supersede"):
            await marks.set(name, log_top)
            continue
        for place, top in per_place:
            await marks.set(name, int(top), str(place))
        await marks.set(name, newest)
