"""Setting a familiar up: what the welcome flow and Settings read, check and save (`facade.setup`).

- `current()`: every connection setting with the value in force and where it comes from (character.toml,
  the OS keyring or the secrets file, an environment variable, or nothing).
- `check_discord()`: a bot token against Discord (app/runtime/discord/check.py).
- `list_models()` / `test_endpoint()`: the LLM endpoint that would really be used: the typed values of a
  draft, except where an environment variable overrides them (as it will once saved).
- `save()`: validates everything, writes character.toml and the secrets, then `Familiar.reconfigure()`
  puts the new settings in force for replies, the memory workers, the persona and the lorebook at once.
- `preview_card()` / `apply_card()`: a character card made into this familiar.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths
from app.config.secrets import SECRET_ENVIRONMENT, SecretStore
from app.config.settings import (
    ENVIRONMENT_OVERRIDES,
    BackgroundLLMSection,
    Secrets,
    Settings,
    environment_override,
    keys_in_file,
)
from app.runtime.api.setup_views import (
    CardApplied,
    CardPreview,
    DiscordCheck,
    ModelList,
    SettingSource,
    SettingsUpdate,
    SettingsView,
    SettingValue,
    Which,
)
from app.runtime.errors import FamiliarError
from app.runtime.llm import LLMClient, LLMEndpoint
from app.runtime.wiring import Loaded

MAX_NAME_CHARS = 100
MAX_MODEL_CHARS = 200
# (key, label) of each setting shown, in order; a key with a dot is in character.toml, one without a secret.
SHOWN: tuple[tuple[str, str], ...] = (
    ("familiar.display_name", "Name"),
    ("discord_token", "Bot token"),
    ("discord.api_base", "Discord API address"),
    ("discord.gateway_url", "Discord gateway address"),
    ("llm.base_url", "LLM endpoint"),
    ("llm.model", "Model"),
    ("llm_api_key", "API key"),
    ("llm.background.base_url", "Background endpoint"),
    ("llm.background.model", "Background model"),
    ("llm_background_api_key", "Background API key"),
)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


class SetupService:
    """`facade.setup`: see the module docstring."""

    def __init__(
        self,
        paths: FamiliarPaths,
        secret_store: SecretStore,
        env: Mapping[str, str] | None,
        loaded: Callable[[], Loaded],
        reconfigure: Callable[[], Awaitable[None]],
    ) -> None:
        self._paths = paths
        self._store = secret_store
        self._env = env
        self._loaded = loaded
        self._reconfigure = reconfigure
        self._writing = asyncio.Lock()

    def _environ(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    # -- reading -------------------------------------------------------------------------------
    async def current(self) -> SettingsView:
        loaded = self._loaded()
        in_file, saved_in, card_name = await asyncio.to_thread(self._sources)
        values = tuple(self._value(key, label, loaded, in_file, saved_in) for key, label in SHOWN)
        return SettingsView(values, self._paths.character_toml, self._store.backend_name, card_name)

    def _sources(self) -> tuple[frozenset[str], dict[str, str | None], str]:
        """Blocking: character.toml is read, the keyring asked, and the card the familiar came from read."""
        try:
            in_file = keys_in_file(self._paths.character_toml)
        except ConfigError:
            in_file = frozenset()  # edited since it was loaded, and broken: what is in force came from it
        return in_file, {key: self._store.saved_in(key) for key in SECRET_ENVIRONMENT}, self._card_name()

    def _card_name(self) -> str:
        """The name of the card the familiar was made from (its card.json), "" if none or unreadable."""
        from app.runtime.cards import CARD_FILE, CardError, card_display_name  # the card code: only when asked

        kept = self._paths.folder / CARD_FILE
        if not kept.is_file():
            return ""
        try:
            return card_display_name(kept)
        except (CardError, OSError):
            return ""  # a card.json edited into something else: the familiar is no card's any more

    def _value(
        self, key: str, label: str, loaded: Loaded, in_file: frozenset[str], saved_in: dict[str, str | None]
    ) -> SettingValue:
        environ = self._environ()
        if key in SECRET_ENVIRONMENT:
            variable = SECRET_ENVIRONMENT[key]
            secret = str(getattr(loaded.secrets, key))
            hint = f"…{secret[-4:]}" if len(secret) >= 12 else ("set" if secret else "")
            if environ.get(variable, "").strip():
                source, origin = SettingSource.ENVIRONMENT, variable
            elif saved_in.get(key) == "keyring":
                source, origin = SettingSource.KEYRING, "the OS keyring"
            elif saved_in.get(key) == "file":
                source, origin = SettingSource.SECRETS_FILE, str(self._store.fallback_file)
            else:
                source, origin, hint = SettingSource.DEFAULT, "", ""
            return SettingValue(key, label, "", source, origin, variable, secret=True, hint=hint)
        value = _dotted(loaded.settings, key)
        variable = ENVIRONMENT_OVERRIDES.get(key, "")
        if environment_override(key, environ):
            source, origin = SettingSource.ENVIRONMENT, variable
        elif key in in_file:
            source, origin = SettingSource.FILE, str(self._paths.character_toml)
        else:
            source, origin = SettingSource.DEFAULT, ""
        return SettingValue(key, label, value, source, origin, variable)

    # -- checking --------------------------------------------------------------------------------
    async def check_discord(self, token: str | None = None) -> DiscordCheck:
        """Check `token` (None: the token in force; DISCORD_TOKEN, when set, is always the one checked)
        against the Discord server in force."""
        loaded = self._loaded()
        if token is None or self._environ().get(SECRET_ENVIRONMENT["discord_token"], "").strip():
            token = loaded.secrets.discord_token
        from app.runtime.discord.check import check_bot_token  # discord.py loads when a token is checked

        return await check_bot_token(token, loaded.settings.discord)

    def endpoint(self, draft: SettingsUpdate, which: Which = "replies") -> LLMEndpoint:
        """The endpoint a Test would use: the draft's values over those in force, except where an
        environment variable sets one (it would still win once saved). No I/O."""
        loaded = self._loaded()
        environ = self._environ()
        llm = loaded.settings.llm

        def typed(key: str, value: str | None, current: str) -> str:
            return current if value is None or environment_override(key, environ) else value.strip()

        def secret(key: str, value: str | None, current: str) -> str:
            overridden = environ.get(SECRET_ENVIRONMENT[key], "").strip()
            return current if value is None or overridden else value.strip()

        llm = dataclasses.replace(
            llm,
            base_url=typed("llm.base_url", draft.llm_base_url, llm.base_url),
            model=typed("llm.model", draft.llm_model, llm.model),
            background=BackgroundLLMSection(
                base_url=typed("llm.background.base_url", draft.background_base_url, llm.background.base_url),
                model=typed("llm.background.model", draft.background_model, llm.background.model),
            ),
        )
        secrets = Secrets(
            discord_token=loaded.secrets.discord_token,
            llm_api_key=secret("llm_api_key", draft.llm_api_key, loaded.secrets.llm_api_key),
            llm_background_api_key=secret(
                "llm_background_api_key", draft.background_api_key, loaded.secrets.llm_background_api_key
            ),
        )
        made = LLMEndpoint.for_replies(llm, secrets) if which == "replies" else LLMEndpoint.for_background(llm, secrets)
        return dataclasses.replace(made, max_retries=0)  # a test answers at once: no backoff

    async def list_models(self, draft: SettingsUpdate | None = None, which: Which = "replies") -> ModelList:
        """The models the endpoint in `draft` (see `endpoint`) serves; raises FamiliarError (one line)."""
        endpoint = self.endpoint(draft or SettingsUpdate(), which)
        client = LLMClient(endpoint)
        try:
            models = await client.list_models()
        finally:
            await client.aclose()
        return ModelList(endpoint.shown_url, models, endpoint.model)  # shown: no user:password

    async def test_endpoint(self, draft: SettingsUpdate | None = None, which: Which = "replies") -> str:
        """A tiny request to the endpoint in `draft` (see `endpoint`); a one-line result naming the
        endpoint and model tested, or FamiliarError."""
        client = LLMClient(self.endpoint(draft or SettingsUpdate(), which))
        try:
            return await client.check()
        finally:
            await client.aclose()

    # -- writing ---------------------------------------------------------------------------------
    async def save(self, update: SettingsUpdate) -> SettingsView:
        """Check every value, write character.toml and the secrets, then put them in force at once.
        A bad value raises FamiliarError before anything is written."""
        from app.config.editing import set_values  # tomlkit: for a save, not for every command's start

        values, secrets = _checked(update)
        async with self._writing:
            if values:
                try:
                    await asyncio.to_thread(set_values, self._paths.character_toml, values)
                except ConfigError as exc:
                    raise FamiliarError(str(exc)) from exc
            if secrets:
                await asyncio.to_thread(self._save_secrets, secrets)
            await self._reconfigure()
        return await self.current()

    def _save_secrets(self, secrets: dict[str, str]) -> None:
        try:
            for key, value in secrets.items():
                self._store.set(key, value)
        except OSError as exc:
            where = self._store.fallback_file
            raise FamiliarError(f"The secrets could not be saved in {where} ({exc.strerror or exc}).") from exc

    async def preview_card(self, path: Path) -> CardPreview:
        """What a card file would bring; FamiliarError (one line) when it is not a card this reads."""
        from app.runtime.cards import preview_card

        return await asyncio.to_thread(preview_card, path)

    async def apply_card(self, path: Path) -> CardApplied:
        """Make this familiar the card's character (persona, name, greeting, lorebook), then put it in
        force at once. The files it replaces are kept beside them (`CardApplied.kept`)."""
        from app.runtime.cards import apply_card_to_familiar

        async with self._writing:
            try:
                applied = await asyncio.to_thread(apply_card_to_familiar, path, self._paths)
            except ConfigError as exc:
                raise FamiliarError(str(exc)) from exc
            await self._reconfigure()
        return applied


def _dotted(settings: Settings, key: str) -> str:
    node: object = settings
    for part in key.split("."):
        node = getattr(node, part)
    return str(node)


def _checked(update: SettingsUpdate) -> tuple[dict[str, str], dict[str, str]]:
    """(character.toml values, secrets) of `update`, each checked; FamiliarError names the first bad one."""
    values: dict[str, str] = {}
    secrets: dict[str, str] = {}
    if update.display_name is not None:
        name = update.display_name.strip()
        if not name:
            raise FamiliarError("Give the familiar a name.")
        if len(name) > MAX_NAME_CHARS or _UNPRINTABLE.search(name):
            raise FamiliarError(f"The name must be one line of at most {MAX_NAME_CHARS} characters.")
        values["familiar.display_name"] = name
    for key, url, what in (
        ("llm.base_url", update.llm_base_url, "The LLM endpoint"),
        ("llm.background.base_url", update.background_base_url, "The background endpoint"),
    ):
        if url is not None:
            url = url.strip()
            if url and (not re.match(r"^https?://[^\s/]+", url, re.IGNORECASE) or re.search(r"\s", url)):
                raise FamiliarError(f"{what} must be a web address starting with http:// or https:// (got '{url}').")
            values[key] = url
    for key, model in (("llm.model", update.llm_model), ("llm.background.model", update.background_model)):
        if model is not None:
            model = model.strip()
            if len(model) > MAX_MODEL_CHARS or _UNPRINTABLE.search(model):
                raise FamiliarError(f"The model name must be one line of at most {MAX_MODEL_CHARS} characters.")
            values[key] = model
    if update.bot_token is not None:
        token = update.bot_token.strip()
        from app.runtime.discord.check import token_problem  # discord.py loads when a token is checked

        problem = token_problem(token) if token else None
        if problem is not None:
            raise FamiliarError(problem)
        secrets["discord_token"] = token
    for key, api_key in (("llm_api_key", update.llm_api_key), ("llm_background_api_key", update.background_api_key)):
        if api_key is not None:
            api_key = api_key.strip()
            if re.search(r"[\s\x00-\x1f\x7f]", api_key):
                raise FamiliarError("An API key is one line without spaces: copy it again.")
            secrets[key] = api_key
    return values, secrets
