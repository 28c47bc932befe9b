"""The records of setting a familiar up (the welcome flow and Settings), and the LLM endpoint presets.

No I/O and no heavy imports here: the window imports this module to draw the welcome flow and Settings.
The service that fills these records is app/runtime/api/setup.py.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Which = Literal["replies", "background"]
"""Which LLM endpoint: the one that answers messages, or the one for background memory work."""


class SettingSource(enum.Enum):
    """Where the value in force of one setting comes from."""

    DEFAULT = "default"  # nothing sets it: the built-in default (blank for the endpoints)
    FILE = "file"  # character.toml
    KEYRING = "keyring"  # the OS keyring
    SECRETS_FILE = "secrets file"  # the owner-only secrets.toml, when there is no usable keyring
    ENVIRONMENT = "environment"  # an environment variable, which wins over everything else


@dataclass(frozen=True, slots=True)
class SettingValue:
    """One setting as it is in force now, and where that comes from."""

    key: str  # "llm.base_url" (a character.toml key) or "llm_api_key" (a secret's name)
    label: str  # in words: "LLM endpoint"
    value: str  # the value in force; always "" for a secret (see `hint`)
    source: SettingSource
    origin: str  # where, in words: "character.toml", "the OS keyring", "FAMILIAR_LLM_BASE_URL"...
    variable: str = ""  # the environment variable that overrides it ("" if none does)
    secret: bool = False
    hint: str = ""  # a secret in force: its last characters ("…c0de"), so the owner can tell which one

    @property
    def from_environment(self) -> bool:
        return self.source is SettingSource.ENVIRONMENT

    @property
    def is_set(self) -> bool:
        return bool(self.value or self.hint)

    def describe(self) -> str:
        """Where the value comes from, as Settings shows it beside the field."""
        if self.source is SettingSource.ENVIRONMENT:
            return f"set by {self.variable} (environment)"
        if self.source is SettingSource.DEFAULT:
            return "default" if self.value else "not set"
        if self.source is SettingSource.FILE:
            # `base_url = ""` in the file sets nothing: saying where an empty value comes from would read as set
            return "from character.toml" if self.value else "not set"
        return f"saved in {self.origin}"


@dataclass(frozen=True, slots=True)
class SettingsView:
    """The settings Settings and the welcome flow show: values in force with their sources."""

    values: tuple[SettingValue, ...]
    settings_file: Path  # the familiar's character.toml
    secrets_location: str  # where secrets are saved, in words ("OS keyring" or the fallback file)
    card_name: str = ""  # the name of the character card the familiar was made from ("" if none)

    def get(self, key: str) -> SettingValue:
        for value in self.values:
            if value.key == key:
                return value
        raise KeyError(key)

    @property
    def display_name(self) -> str:
        return self.get("familiar.display_name").value

    @property
    def named_by_card(self) -> bool:
        """Made from a character card and still called by the card's name: there is no name left to choose."""
        return bool(self.card_name) and self.card_name == self.display_name

    @property
    def background_follows_replies(self) -> bool:
        """No separate endpoint, model or key is set for background memory work."""
        keys = ("llm.background.base_url", "llm.background.model", "llm_background_api_key")
        return not any(self.get(key).is_set for key in keys)


@dataclass(frozen=True, slots=True)
class SettingsUpdate:
    """What to change. None leaves a setting as it is; "" clears it (a cleared background value
    follows the reply endpoint again). Also a draft: the endpoint a Test would use."""

    display_name: str | None = None
    bot_token: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    background_base_url: str | None = None
    background_model: str | None = None
    background_api_key: str | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in dataclasses.fields(self))


class TokenVerdict(enum.Enum):
    OK = "ok"
    INTENT_OFF = "intent off"  # the token is good, but Discord would refuse the Message Content intent
    INVALID = "invalid token"
    MALFORMED = "malformed"  # not even shaped like a token: nothing was sent
    UNREACHABLE = "unreachable"  # the network, or the server, did not answer
    ERROR = "error"  # Discord answered something else (rate limited, 5xx...)


@dataclass(frozen=True, slots=True)
class DiscordCheck:
    """What Discord said about a bot token."""

    verdict: TokenVerdict
    message: str  # one line a user can act on
    bot_name: str = ""
    bot_id: int | None = None
    application_id: int | None = None
    invite_url: str = ""  # adds the bot to a server with the permissions it needs ("" when unknown)

    @property
    def token_works(self) -> bool:
        """The token logs in (the intent may still need switching on)."""
        return self.verdict in (TokenVerdict.OK, TokenVerdict.INTENT_OFF)


@dataclass(frozen=True, slots=True)
class ModelList:
    """The models an endpoint serves."""

    base_url: str  # the endpoint asked (the one in force: an environment override wins), without user:password
    models: tuple[str, ...]
    current: str  # the model set now ("" if none)


@dataclass(frozen=True, slots=True)
class CardPreview:
    """A character card, read but not applied."""

    path: Path
    name: str
    source: str  # what the file is, in words ("a Character Card V2 (PNG)")
    description: str  # the start of its description, on one line
    lore_entries: int
    has_greeting: bool
    has_image: bool


@dataclass(frozen=True, slots=True)
class CardApplied:
    """A card made into this familiar: its persona, greeting, name and lorebook."""

    display_name: str
    source: str
    lore_entries: int
    has_greeting: bool
    kept: tuple[Path, ...]  # copies of the files it replaced (none for a fresh familiar)


@dataclass(frozen=True, slots=True)
class EndpointPreset:
    """A kind of OpenAI-compatible server, with its usual address."""

    name: str
    base_url: str  # "" for Other
    needs_key: bool
    hint: str  # one line: what it is and what to do first


PRESETS: tuple[EndpointPreset, ...] = (
    EndpointPreset(
        "Ollama",
        "http://127.0.0.1:11434/v1",
        False,
        "Runs models on this computer: install it from ollama.com, then e.g. `ollama pull llama3.1`.",
    ),
    EndpointPreset(
        "LM Studio",
        "http://127.0.0.1:1234/v1",
        False,
        "Runs models on this computer: load a model and start the server in LM Studio's Developer tab.",
    ),
    EndpointPreset(
        "llama.cpp",
        "http://127.0.0.1:8080/v1",
        False,
        "llama.cpp's own server on this computer: `llama-server -m MODEL.gguf`.",
    ),
    EndpointPreset(
        "OpenAI", "https://api.openai.com/v1", True, "Needs an API key from platform.openai.com (billed per use)."
    ),
    EndpointPreset(
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        True,
        "Many hosted models behind one API key from openrouter.ai (some models are free).",
    ),
    EndpointPreset("Other", "", False, "Any OpenAI-compatible server: its address usually ends in /v1."),
)
OTHER_PRESET = PRESETS[-1]


def preset_for(base_url: str) -> EndpointPreset:
    """The preset whose address this is (ignoring a trailing slash), else Other."""
    wanted = base_url.strip().rstrip("/").lower()
    for preset in PRESETS:
        if preset.base_url and preset.base_url.lower() == wanted:
            return preset
    return OTHER_PRESET
