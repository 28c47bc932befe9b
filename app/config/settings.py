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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from app.config.errors import ConfigError


def _doc(text: str) -> dict[str, str]:
    return {"doc": text}


@dataclass(frozen=True, slots=True)
class FamiliarSection:
    display_name: str = field(default="Familiar", metadata=_doc("The name the familiar goes by in prompts."))


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
    max_concurrency: int = field(default=2, metadata=_doc("Requests in flight at once."))
    temperature: float = field(default=0.8, metadata=_doc("Sampling temperature for replies."))
    max_tokens: int = field(default=600, metadata=_doc("Longest reply, in tokens."))
    background: BackgroundLLMSection = field(
        default_factory=BackgroundLLMSection, metadata=_doc("Overrides for background memory work.")
    )


@dataclass(frozen=True, slots=True)
class HistorySection:
    recent_turns: int = field(default=20, metadata=_doc("How many recent turns of the channel go into a reply."))


@dataclass(frozen=True, slots=True)
class Settings:
    familiar: FamiliarSection = field(default_factory=FamiliarSection, metadata=_doc("Who the familiar is."))
    discord: DiscordSection = field(default_factory=DiscordSection, metadata=_doc("The Discord connection."))
    llm: LLMSection = field(default_factory=LLMSection, metadata=_doc("The language model endpoint."))
    history: HistorySection = field(default_factory=HistorySection, metadata=_doc("Conversation history."))


@dataclass(frozen=True, slots=True)
class Secrets:
    discord_token: str = ""
    llm_api_key: str = ""


_RANGES: dict[str, tuple[float, float]] = {
    "discord.guild_ready_timeout": (0.0, 60.0),
    "llm.timeout": (1.0, 3600.0),
    "llm.max_retries": (0, 10),
    "llm.max_concurrency": (1, 64),
    "llm.temperature": (0.0, 2.0),
    "llm.max_tokens": (1, 200_000),
    "history.recent_turns": (0, 500),
}

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
        return value
    elif origin is tuple:
        (item_hint, _ellipsis) = get_args(hint)
        if not isinstance(value, list):
            fail(dotted, f"expected a list, got {type(value).__name__}")
        return tuple(_check_value(item, item_hint, dotted, fail) for item in value)
    else:  # pragma: no cover - schema programming error
        raise TypeError(f"unsupported schema type {hint!r} for {dotted}")
    if dotted in _RANGES:
        low, high = _RANGES[dotted]
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


def load_settings(path: Path) -> Settings:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(path, None, None, "file not found") from None
    except OSError as exc:
        raise ConfigError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")  # a BOM (Windows editors) is fine
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(path, line, None, "not valid UTF-8") from None
    return parse_settings(text, path)


def apply_environment(settings: Settings, env: dict[str, str] | None = None) -> Settings:
    """Apply the documented environment overrides (FAMILIAR_DISCORD_*, FAMILIAR_LLM_*)."""
    environ = os.environ if env is None else env
    discord = settings.discord
    llm = settings.llm
    if environ.get("FAMILIAR_DISCORD_API_BASE"):
        discord = dataclasses.replace(discord, api_base=environ["FAMILIAR_DISCORD_API_BASE"])
    if environ.get("FAMILIAR_DISCORD_GATEWAY_URL"):
        discord = dataclasses.replace(discord, gateway_url=environ["FAMILIAR_DISCORD_GATEWAY_URL"])
    if environ.get("FAMILIAR_LLM_BASE_URL"):
        llm = dataclasses.replace(llm, base_url=environ["FAMILIAR_LLM_BASE_URL"])
    if environ.get("FAMILIAR_LLM_MODEL"):
        llm = dataclasses.replace(llm, model=environ["FAMILIAR_LLM_MODEL"])
    return dataclasses.replace(settings, discord=discord, llm=llm)


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
    return out


__all__ = [
    "BackgroundLLMSection",
    "DiscordSection",
    "FamiliarSection",
    "HistorySection",
    "LLMSection",
    "Secrets",
    "Settings",
    "apply_environment",
    "iter_options",
    "load_settings",
    "parse_settings",
]
