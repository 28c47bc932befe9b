"""The typed schema of character.toml, its strict loader and the environment overrides.

One schema: every option is a dataclass field with a default and a one-line description
(`field(metadata={"doc": ...})`). Unknown keys and wrong types are errors that name the file, the
line and the key; nothing is written while loading.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from app.config.errors import ConfigError


def _doc(text: str) -> dict[str, str]:
    return {"doc": text}


@dataclass(frozen=True, slots=True)
class FamiliarSection:
    display_name: str = field(default="Familiar", metadata=_doc("The name the familiar goes by in prompts."))
    greeting: str = field(
        default="",
        metadata=_doc("An opening message in the familiar's voice (a character card's first message); blank = none."),
    )


@dataclass(frozen=True, slots=True)
class DiscordSection:
    home_channels: tuple[int, ...] = field(
        default=(), metadata=_doc("Channel ids where the familiar answers every message, not only mentions.")
    )
    allow_dms: bool = field(default=True, metadata=_doc("Answer direct messages."))
    respond_to_bots: bool = field(default=False, metadata=_doc("Answer messages written by other bots."))
    message_content_intent: bool = field(
        default=True, metadata=_doc("Ask for the privileged Message Content intent (needed to read messages).")
    )
    api_base: str = field(default="", metadata=_doc("REST base of a Discord-compatible server; blank = Discord."))
    gateway_url: str = field(default="", metadata=_doc("Gateway URL of a Discord-compatible server; blank = Discord."))
    guild_ready_timeout: float = field(
        default=2.0, metadata=_doc("Seconds to wait for guilds to stream in after login before reporting ready.")
    )
    max_reply_messages: int = field(
        default=5,
        metadata=_doc("Most Discord messages one reply becomes; a longer reply is cut, and its last message says so."),
    )
    backfill_hours: float = field(
        default=24.0,
        metadata=_doc(
            "At start and after a reconnect that lost events, fetch messages missed in each readable channel"
            " from at most this many hours back (stored, never answered); 0 = off."
        ),
    )
    backfill_messages: int = field(
        default=1000, metadata=_doc("Most missed messages fetched per channel at start or after a reconnect; 0 = off.")
    )
    send_retry_seconds: float = field(
        default=120.0,
        metadata=_doc(
            "How long a reply keeps trying while Discord rate-limits it (429, waiting the retry_after Discord"
            " gives) or its answer is lost; past that it is given up, with the reason in the activity log;"
            " 0 = never retried."
        ),
    )


@dataclass(frozen=True, slots=True)
class BackgroundLLMSection:
    base_url: str = field(default="", metadata=_doc("Endpoint for background memory work; blank = the reply one."))
    model: str = field(default="", metadata=_doc("Model for background memory work; blank = the reply model."))


@dataclass(frozen=True, slots=True)
class LLMSection:
    base_url: str = field(default="", metadata=_doc("OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1."))
    model: str = field(default="", metadata=_doc("Model name the endpoint knows."))
    timeout: float = field(default=60.0, metadata=_doc("Seconds to wait for one answer."))
    max_retries: int = field(default=2, metadata=_doc("Retries with backoff on timeouts and 5xx answers."))
    max_concurrency: int = field(
        default=2,
        metadata=_doc(
            "Requests in flight at once for one place (a channel, a DM, the local chat), and for background"
            " memory work; a slow or stalled request never holds up another place's reply."
        ),
    )
    temperature: float = field(default=0.8, metadata=_doc("Sampling temperature for replies."))
    max_tokens: int = field(default=600, metadata=_doc("Longest reply, in tokens."))
    background: BackgroundLLMSection = field(
        default_factory=BackgroundLLMSection, metadata=_doc("Overrides for background memory work.")
    )


@dataclass(frozen=True, slots=True)
class HistorySection:
    recent_turns: int = field(default=20, metadata=_doc("How many recent turns of the channel go into a reply."))


@dataclass(frozen=True, slots=True)
class MemoryProvidersSection:
    projectors: tuple[str, ...] = field(
        default=("rolling_summary", "rich_note", "people_dossier", "reflection", "fact_supersede"),
        metadata=_doc(
            "Background memory workers to run: rolling_summary, rich_note, people_dossier, reflection,"
            " fact_supersede, fact_embedding, dreaming. An empty list stops all learning."
        ),
    )


@dataclass(frozen=True, slots=True)
class EmbeddingProviderSection:
    backend: str = field(
        default="off", metadata=_doc("off, hash (no model) or fastembed (a local ONNX sentence model, offline).")
    )
    model: str = field(
        default="",
        metadata=_doc("fastembed model name; blank = the bundled all-MiniLM-L6-v2, which needs no network."),
    )
    model_dir: str = field(default="", metadata=_doc("A folder holding the model files; blank = the bundled model."))


@dataclass(frozen=True, slots=True)
class ProvidersSection:
    memory: MemoryProvidersSection = field(
        default_factory=MemoryProvidersSection, metadata=_doc("Which memory projectors run.")
    )
    embedding: EmbeddingProviderSection = field(
        default_factory=EmbeddingProviderSection, metadata=_doc("The sentence embedder for fact recall.")
    )


@dataclass(frozen=True, slots=True)
class RetrievalSection:
    bm25_weight: float = field(default=1.0, metadata=_doc("Weight of full-text relevance in recall."))
    recency_weight: float = field(default=0.0, metadata=_doc("Weight of how recent a fact is."))
    importance_weight: float = field(default=0.6, metadata=_doc("Weight of a fact's 1-10 importance."))
    embedding_weight: float = field(
        default=0.0, metadata=_doc("Weight of meaning similarity (needs an embedding backend and fact_embedding).")
    )
    max_facts: int = field(default=8, metadata=_doc("Most facts recalled into one reply."))
    max_turns: int = field(default=4, metadata=_doc("Most older messages of the channel recalled into one reply."))
    overfetch: int = field(default=4, metadata=_doc("Candidates fetched per recalled item before ranking."))


@dataclass(frozen=True, slots=True)
class LearningSection:
    tick_seconds: float = field(default=15.0, metadata=_doc("How often the memory workers look for new turns."))
    batch_turns: int = field(default=10, metadata=_doc("Turns per fact-extraction batch."))
    summary_turns: int = field(default=20, metadata=_doc("New turns in a channel before its summary is refreshed."))
    reflection_turns: int = field(default=20, metadata=_doc("New turns in a channel before a reflection is tried."))
    max_reflections_per_tick: int = field(default=3, metadata=_doc("Most reflections written per tick."))
    max_turns_per_tick: int = field(default=50, metadata=_doc("Most turns one summary or reflection prompt reads."))
    dream_idle_seconds: float = field(
        default=300.0, metadata=_doc("Quiet seconds in a conversation before it is dreamt over.")
    )


@dataclass(frozen=True, slots=True)
class MemorySection:
    channel_scope_guilds: tuple[int, ...] = field(
        default=(),
        metadata=_doc(
            "Server ids whose learnt facts stay in the channel they came from; in other servers a fact is "
            "recalled in every channel of its server."
        ),
    )
    retrieval: RetrievalSection = field(default_factory=RetrievalSection, metadata=_doc("How recall ranks."))
    learning: LearningSection = field(default_factory=LearningSection, metadata=_doc("How often it learns."))


@dataclass(frozen=True, slots=True)
class BudgetTier:
    character_tokens: int = field(default=1500, metadata=_doc("Tokens for the persona (character.md)."))
    lorebook_tokens: int = field(default=800, metadata=_doc("Tokens for fired lorebook entries."))
    max_lorebook_entries: int = field(default=10, metadata=_doc("Most lorebook entries in one reply."))
    summary_tokens: int = field(default=400, metadata=_doc("Tokens for the conversation summary."))
    reflection_tokens: int = field(default=400, metadata=_doc("Tokens for reflections."))
    max_reflections: int = field(default=5, metadata=_doc("Most reflections in one reply."))
    dossier_tokens: int = field(default=500, metadata=_doc("Tokens for the dossiers of the people present."))
    memory_tokens: int = field(default=800, metadata=_doc("Tokens for recalled facts and older messages."))
    history_tokens: int = field(default=3000, metadata=_doc("Tokens for the recent conversation."))


def _compact_tier() -> BudgetTier:
    return BudgetTier(
        character_tokens=700,
        lorebook_tokens=300,
        max_lorebook_entries=4,
        summary_tokens=200,
        reflection_tokens=150,
        max_reflections=2,
        dossier_tokens=200,
        memory_tokens=300,
        history_tokens=1200,
    )


@dataclass(frozen=True, slots=True)
class BudgetSection:
    tier: str = field(default="text", metadata=_doc("The budget tier replies use: text or compact."))
    text: BudgetTier = field(default_factory=BudgetTier, metadata=_doc("Budgets for roomy models."))
    compact: BudgetTier = field(
        default_factory=_compact_tier, metadata=_doc("Budgets for small local models (about 4k tokens of context).")
    )


@dataclass(frozen=True, slots=True)
class ChannelSection:
    prompt_layers: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "Context layers for this channel, in order (character, lorebook, summary, reflections, dossiers,"
            " memory, history); empty = all, in that order."
        ),
    )
    budget_tier: str = field(default="", metadata=_doc("Budget tier for this channel; blank = [budget] tier."))


@dataclass(frozen=True, slots=True)
class Settings:
    familiar: FamiliarSection = field(default_factory=FamiliarSection, metadata=_doc("Who the familiar is."))
    discord: DiscordSection = field(default_factory=DiscordSection, metadata=_doc("The Discord connection."))
    llm: LLMSection = field(default_factory=LLMSection, metadata=_doc("The language model endpoint."))
    history: HistorySection = field(default_factory=HistorySection, metadata=_doc("Conversation history."))
    providers: ProvidersSection = field(default_factory=ProvidersSection, metadata=_doc("Memory workers, embedder."))
    memory: MemorySection = field(default_factory=MemorySection, metadata=_doc("Recall and learning."))
    budget: BudgetSection = field(default_factory=BudgetSection, metadata=_doc("Token budgets per tier."))
    channels: dict[str, ChannelSection] = field(
        default_factory=dict,
        metadata=_doc(
            'Per-channel overrides, keyed by Discord channel id, "dm" (every DM) or "local" (the window chat).'
        ),
    )


@dataclass(frozen=True, slots=True)
class Secrets:
    discord_token: str = ""
    llm_api_key: str = ""
    llm_background_api_key: str = ""  # blank = the reply key


_RANGES: dict[str, tuple[float, float]] = {
    "discord.guild_ready_timeout": (0.0, 60.0),
    "discord.max_reply_messages": (1, 50),
    "discord.backfill_hours": (0.0, 24.0 * 365),
    "discord.backfill_messages": (0, 1_000_000),
    "discord.send_retry_seconds": (0.0, 3600.0),
    "llm.timeout": (1.0, 3600.0),
    "llm.max_retries": (0, 10),
    "llm.max_concurrency": (1, 64),
    "llm.temperature": (0.0, 2.0),
    "llm.max_tokens": (1, 200_000),
    "history.recent_turns": (0, 500),
    "memory.retrieval.bm25_weight": (0.0, 100.0),
    "memory.retrieval.recency_weight": (0.0, 100.0),
    "memory.retrieval.importance_weight": (0.0, 100.0),
    "memory.retrieval.embedding_weight": (0.0, 100.0),
    "memory.retrieval.max_facts": (0, 100),
    "memory.retrieval.max_turns": (0, 100),
    "memory.retrieval.overfetch": (1, 20),
    "memory.learning.tick_seconds": (0.05, 86_400.0),
    "memory.learning.batch_turns": (1, 200),
    "memory.learning.summary_turns": (1, 10_000),
    "memory.learning.reflection_turns": (1, 10_000),
    "memory.learning.max_reflections_per_tick": (0, 20),
    "memory.learning.max_turns_per_tick": (1, 500),
    "memory.learning.dream_idle_seconds": (0.0, 604_800.0),
}
_TIER_RANGE = (0, 100_000)
_ENUMS: dict[str, tuple[str, ...]] = {
    "providers.embedding.backend": ("off", "hash", "fastembed"),
    "budget.tier": ("text", "compact"),
}
_CHANNEL_KEY = re.compile(r"^(\d{1,20}|dm|local)$")

T = TypeVar("T")


def _line_of(text: str, dotted: str) -> int | None:
    """Best-effort line number of a dotted key (or table) in TOML source."""
    parts = dotted.split(".")
    table: list[str] = []
    header = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    assign = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        match = header.match(line)
        if match:
            table = [p.strip().strip("\"'") for p in match.group(1).split(".")]
            if table == parts:
                return number
            continue
        match = assign.match(line)
        if match:
            key = [p.strip().strip("\"'") for p in match.group(1).split(".")]
            if table + key == parts or (table + key)[: len(parts)] == parts:
                return number
    return None


def _check_value(value: Any, hint: Any, dotted: str, fail: Any) -> Any:
    origin = get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            fail(dotted, f"expected true or false, got {type(value).__name__}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            fail(dotted, f"expected a whole number, got {type(value).__name__}")
        result: Any = value
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            fail(dotted, f"expected a number, got {type(value).__name__}")
        try:
            result = float(value)
        except OverflowError:  # an integer literal beyond a float's range
            fail(dotted, "the number is too large")
    elif hint is str:
        if not isinstance(value, str):
            fail(dotted, f"expected a string, got {type(value).__name__}")
        choices = _ENUMS.get(dotted) or (("", *_ENUMS["budget.tier"]) if dotted.endswith(".budget_tier") else None)
        if choices is not None and value not in choices:
            fail(dotted, f"{value!r} is not one of: {', '.join(repr(c) for c in choices)}")
        return value
    elif origin is tuple:
        (item_hint, _ellipsis) = get_args(hint)
        if not isinstance(value, list):
            fail(dotted, f"expected a list, got {type(value).__name__}")
        return tuple(_check_value(item, item_hint, dotted, fail) for item in value)
    else:  # pragma: no cover - schema programming error
        raise TypeError(f"unsupported schema type {hint!r} for {dotted}")
    limits = _RANGES.get(dotted) or (_TIER_RANGE if dotted.startswith("budget.") else None)
    if limits is not None:
        low, high = limits
        if not low <= result <= high:
            fail(dotted, f"{result} is out of range ({low:g} to {high:g})")
    return result


def _build(cls: type[T], data: dict[str, Any], prefix: str, fail: Any) -> T:
    hints = get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if key not in known:
            choices = ", ".join(sorted(known))
            fail(dotted, f"unknown key (known keys here: {choices})")
        hint = hints[key]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if not isinstance(value, dict):
                fail(dotted, f"expected a table [{dotted}], got {type(value).__name__}")
            values[key] = _build(hint, value, dotted + ".", fail)
        elif get_origin(hint) is dict:
            (_key_hint, item_cls) = get_args(hint)
            if not isinstance(value, dict):
                fail(dotted, f"expected a table [{dotted}], got {type(value).__name__}")
            items: dict[str, Any] = {}
            for name, item in value.items():
                if not _CHANNEL_KEY.match(name):
                    fail(f"{dotted}.{name}", 'expected a Discord channel id, "dm" or "local" as the table name')
                if not isinstance(item, dict):
                    fail(f"{dotted}.{name}", f"expected a table, got {type(item).__name__}")
                items[name] = _build(item_cls, item, f"{dotted}.{name}.", fail)
            values[key] = items
        else:
            values[key] = _check_value(value, hint, dotted, fail)
    return cls(**values)


def parse_settings(text: str, path: Path) -> Settings:
    """Parse and validate character.toml text. Raises ConfigError naming file, line and key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+)", str(exc))
        line = int(found.group(1)) if found else text.count("\n") + 1
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise ConfigError(path, line, None, f"not valid TOML: {message}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(path, None, None, "not valid TOML: values are nested too deeply") from None

    def fail(dotted: str, problem: str) -> None:
        raise ConfigError(path, _line_of(text, dotted), dotted, problem)

    return _build(Settings, data, "", fail)


def config_error_at(path: Path, dotted: str, problem: str) -> ConfigError:
    """A ConfigError about `dotted` in the file at `path`, with the key's line when it can be found
    (for checks that need the runtime, such as projector and layer names)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return ConfigError(path, None, dotted, problem)
    return ConfigError(path, _line_of(text, dotted), dotted, problem)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(path, None, None, "file not found") from None
    except OSError as exc:
        raise ConfigError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")  # a BOM (Windows editors) is fine
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(path, line, None, "not valid UTF-8") from None


def load_settings(path: Path) -> Settings:
    return parse_settings(_read_text(path), path)


ENVIRONMENT_OVERRIDES: dict[str, str] = {
    "discord.api_base": "FAMILIAR_DISCORD_API_BASE",
    "discord.gateway_url": "FAMILIAR_DISCORD_GATEWAY_URL",
    "llm.base_url": "FAMILIAR_LLM_BASE_URL",
    "llm.model": "FAMILIAR_LLM_MODEL",
}
"""character.toml keys an environment variable overrides (when set and not blank): the one list that
`apply_environment` applies and Settings shows as "set by <variable>"."""


def environment_override(dotted: str, env: Mapping[str, str] | None = None) -> str | None:
    """The variable overriding the key `dotted` in `env` (default: the process's), or None."""
    environ = os.environ if env is None else env
    variable = ENVIRONMENT_OVERRIDES.get(dotted)
    return variable if variable is not None and environ.get(variable) else None


def apply_environment(settings: Settings, env: Mapping[str, str] | None = None) -> Settings:
    """Apply the documented environment overrides (ENVIRONMENT_OVERRIDES)."""
    environ = os.environ if env is None else env
    for dotted, variable in ENVIRONMENT_OVERRIDES.items():
        value = environ.get(variable)
        if value:
            section_name, key = dotted.split(".")
            section = dataclasses.replace(getattr(settings, section_name), **{key: value})
            settings = dataclasses.replace(settings, **{section_name: section})
    return settings


def keys_in_file(path: Path) -> frozenset[str]:
    """The dotted keys character.toml at `path` sets itself (the others have their defaults).
    Blocking file I/O. Raises ConfigError like `load_settings`."""
    settings_text = _read_text(path)
    parse_settings(settings_text, path)
    found: set[str] = set()

    def walk(table: Mapping[str, Any], prefix: str) -> None:
        for key, value in table.items():
            dotted = f"{prefix}{key}"
            if isinstance(value, dict):
                walk(value, dotted + ".")
            else:
                found.add(dotted)

    walk(tomllib.loads(settings_text), "")
    return frozenset(found)


def iter_options(cls: type[Any] = Settings, prefix: str = "") -> list[tuple[str, str]]:
    """Every option as (dotted name, description); a test checks each one is documented."""
    out: list[tuple[str, str]] = []
    hints = get_type_hints(cls)
    for f in dataclasses.fields(cls):
        dotted = prefix + f.name
        out.append((dotted, str(f.metadata.get("doc", ""))))
        hint = hints[f.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            out.extend(iter_options(hint, dotted + "."))
        elif get_origin(hint) is dict:
            out.extend(iter_options(get_args(hint)[1], dotted + ".<id>."))
    return out


__all__ = [
    "ENVIRONMENT_OVERRIDES",
    "BackgroundLLMSection",
    "BudgetSection",
    "BudgetTier",
    "ChannelSection",
    "DiscordSection",
    "EmbeddingProviderSection",
    "FamiliarSection",
    "HistorySection",
    "LLMSection",
    "LearningSection",
    "MemoryProvidersSection",
    "MemorySection",
    "ProvidersSection",
    "RetrievalSection",
    "Secrets",
    "Settings",
    "apply_environment",
    "config_error_at",
    "environment_override",
    "iter_options",
    "keys_in_file",
    "load_settings",
    "parse_settings",
]
