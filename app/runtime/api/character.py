"""`facade.character`: the persona (character.md) and the settings of character.toml that make the
character (its name, greeting, where it answers, its model and sampling), read, checked and saved.

- `load()` gives the files' values (the file's, not an environment override's: those are listed) and
  a revision of both files; `save(draft, revision)` refuses with CharacterChangedError when either
  file changed on disk since, writes character.toml round-trip (comments, order, unknown tables
  kept; only the keys whose value changed are touched) and character.md, each atomically, then puts
  them in force with `reconfigure()`: the next reply uses them, no restart. When they cannot be put
  in force the files are written back as they were and nothing changed.
- `check(draft)` validates each field with the settings loader itself (app/config/settings.py), so
  a field's message is the loader's, naming the key: "key 'llm.temperature': 7.0 is out of range
  (0 to 2)". A number typed as text is read as a TOML value.
- `restore(files, revision)` puts the texts a save replaced back (an undo), with the same check.
- `channels(home)` lists the servers and channels the familiar sees, by name, to choose home
  channels from: the connected bot's channels and every place it has heard in; ids seen nowhere
  come back as "channel 123 (not seen)".
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import os
import stat
import tempfile
import tomllib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths
from app.config.settings import Settings, parse_settings
from app.memory.catalog import Catalog
from app.memory.errors import STORE_FAILURES
from app.runtime.api.views import (
    ChannelCatalog,
    ChannelChoice,
    CharacterDraft,
    CharacterFiles,
    CharacterSaved,
    CharacterView,
    FieldProblem,
    ServerChoice,
    SettingOverride,
)
from app.runtime.context.budget import count_tokens
from app.runtime.errors import CharacterChangedError, FamiliarError
from app.runtime.events import ChannelInfo
from app.runtime.names import NameTable

if TYPE_CHECKING:  # app.config.editing (tomlkit) loads when character.toml is written, not at every start
    from app.config.editing import TomlValue

_log = logging.getLogger(__name__)

FIELD_KEYS: Mapping[str, str] = {
    "display_name": "familiar.display_name",
    "greeting": "familiar.greeting",
    "home_channels": "discord.home_channels",
    "allow_dms": "discord.allow_dms",
    "respond_to_bots": "discord.respond_to_bots",
    "model": "llm.model",
    "temperature": "llm.temperature",
    "max_tokens": "llm.max_tokens",
    "budget_tier": "budget.tier",
}
"""Each draft field (but the persona) and the character.toml key it is."""

_OVERRIDES: Mapping[str, str] = {"model": "FAMILIAR_LLM_MODEL"}
"""Draft fields an environment variable overrides (app/config/settings.py apply_environment)."""

_uncounted_tokens = count_tokens.__wrapped__  # the persona changes with every key: keep it out of the cache


@dataclass(frozen=True, slots=True)
class _OnDisk:
    toml: bytes | None  # None: the file is missing
    persona: bytes | None

    @property
    def revision(self) -> str:
        return f"{_digest(self.toml)}.{_digest(self.persona)}"


def _digest(data: bytes | None) -> str:
    return "missing" if data is None else hashlib.sha256(data).hexdigest()[:20]


def _setting_hint(dotted: str) -> Any:
    """The schema type of a dotted settings key."""
    cls: Any = Settings
    *tables, key = dotted.split(".")
    for name in tables:
        cls = get_type_hints(cls)[name]
    return get_type_hints(cls)[key]


def _setting_value(settings: Settings, dotted: str) -> Any:
    node: Any = settings
    for name in dotted.split("."):
        node = getattr(node, name)
    return node


def typed_value(dotted: str, value: object) -> object:
    """A number typed as text read as TOML reads it ("0.7" -> 0.7, "1_000" -> 1000); anything else
    (blank, a word) is left as text for the loader to refuse in its own words."""
    if _setting_hint(dotted) not in (int, float) or not isinstance(value, str):
        return value
    text = value.strip()
    if not text or "\n" in text or "\r" in text:
        return value
    try:
        parsed = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return value
    number = parsed.get("v")
    return number if set(parsed) == {"v"} and isinstance(number, int | float) else value


class CharacterService:
    def __init__(
        self,
        paths: FamiliarPaths,
        catalog: Catalog,
        familiar_name: Callable[[], str],
        reconfigure: Callable[[], Awaitable[None]],
        live_channels: Callable[[], Sequence[ChannelInfo] | None],
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`live_channels` gives the connected bot's text channels (None while not connected);
        `reconfigure` puts what the files say in force (Familiar.reconfigure)."""
        self._paths = paths
        self._catalog = catalog
        self._familiar_name = familiar_name
        self._reconfigure = reconfigure
        self._live_channels = live_channels
        self._env = env
        self._lock = asyncio.Lock()

    # -- reading ---------------------------------------------------------------------------------
    async def load(self) -> CharacterView:
        """The character as its files are now. FamiliarError (file, line, key) when they cannot be used."""
        return self._view(await self._read())

    async def revision(self) -> str:
        """The files' revision now (cheap: to notice a change on disk while they are being edited)."""
        return (await self._read()).revision

    def _view(self, disk: _OnDisk) -> CharacterView:
        paths = self._paths
        if disk.toml is None:
            raise FamiliarError(f"{paths.character_toml}: file not found")
        if disk.persona is None:
            raise FamiliarError(f"{paths.character_md}: file not found")
        settings = self._settings(_decoded(disk.toml, paths.character_toml, "utf-8-sig"))
        persona = _decoded(disk.persona, paths.character_md, "utf-8")
        draft = CharacterDraft(
            persona=persona, **{name: _setting_value(settings, key) for name, key in FIELD_KEYS.items()}
        )
        environ = os.environ if self._env is None else self._env
        overrides = tuple(
            SettingOverride(field=name, variable=variable, value=environ[variable])
            for name, variable in _OVERRIDES.items()
            if environ.get(variable)
        )
        return CharacterView(
            draft=draft,
            revision=disk.revision,
            folder=paths.folder,
            persona_budgets={
                tier.name: getattr(settings.budget, tier.name).character_tokens
                for tier in dataclasses.fields(settings.budget)
                if tier.name != "tier"
            },
            overrides=overrides,
        )

    def _settings(self, text: str) -> Settings:
        try:
            return parse_settings(text, self._paths.character_toml)
        except ConfigError as exc:
            raise FamiliarError(str(exc)) from exc

    async def _read(self) -> _OnDisk:
        paths = self._paths
        toml, persona = await asyncio.gather(
            asyncio.to_thread(_read_bytes, paths.character_toml), asyncio.to_thread(_read_bytes, paths.character_md)
        )
        return _OnDisk(toml, persona)

    # -- checking --------------------------------------------------------------------------------
    def check(self, draft: CharacterDraft) -> tuple[FieldProblem, ...]:
        """What is wrong with each field, in the settings loader's words (no I/O)."""
        return check_draft(draft, self._paths.character_toml)

    def count_tokens(self, text: str) -> int:
        """What `text` costs in the prompt, counted as the context budget counts it."""
        return count_character_tokens(text)

    # -- writing ---------------------------------------------------------------------------------
    async def save(self, draft: CharacterDraft, base_revision: str) -> CharacterSaved:
        """Write the draft over the files as they were at `base_revision` and put it in force."""
        async with self._lock:
            disk = await self._read()
            self._check_revision(disk, base_revision)
            view = self._view(disk)
            problems = self.check(draft)
            if problems:
                problem = problems[0]
                where = self._paths.character_md if problem.field == "persona" else self._paths.character_toml
                raise FamiliarError(f"{where}: {problem.message}; nothing was saved")
            before = CharacterFiles(toml=_text(disk.toml, "utf-8-sig"), persona=view.draft.persona)
            from app.config.editing import edited_text  # tomlkit: for a save, not for every command's start

            changed: dict[str, TomlValue] = {}
            for name, key in FIELD_KEYS.items():
                value = typed_value(key, getattr(draft, name))
                if _same(value, getattr(view.draft, name)):
                    continue
                changed[key] = _toml(value)
            try:
                toml = edited_text(before.toml, self._paths.character_toml, changed) if changed else before.toml
            except ConfigError as exc:
                raise FamiliarError(f"{exc}; nothing was saved") from exc
            self._settings(toml)  # the whole file as the loader will read it
            after = CharacterFiles(toml=toml, persona=draft.persona)
            if after != before:
                await self._put(after, before)
                _log.info("character saved (%s)", ", ".join(changed) or "persona")
            return CharacterSaved(view=self._view(await self._read()), before=before, after=after)

    async def restore(self, files: CharacterFiles, base_revision: str) -> CharacterView:
        """Put these texts back in the files (an undo or redo of a save) and in force; refused like a
        save when the files changed on disk since `base_revision`."""
        async with self._lock:
            disk = await self._read()
            self._check_revision(disk, base_revision)
            current = self._view(disk)
            self._settings(files.toml)
            await self._put(files, CharacterFiles(toml=_text(disk.toml, "utf-8-sig"), persona=current.draft.persona))
            return self._view(await self._read())

    def _check_revision(self, disk: _OnDisk, base_revision: str) -> None:
        if disk.revision == base_revision:
            return
        toml_was, _dot, persona_was = base_revision.partition(".")
        changed = [
            path.name
            for path, digest, was in (
                (self._paths.character_toml, _digest(disk.toml), toml_was),
                (self._paths.character_md, _digest(disk.persona), persona_was),
            )
            if digest != was
        ]
        names = " and ".join(changed) or "the character files"
        raise CharacterChangedError(
            f"{names} changed on disk since {'they were' if len(changed) > 1 else 'it was'} loaded:"
            " reload to see the changes (nothing was saved)"
        )

    async def _put(self, files: CharacterFiles, previous: CharacterFiles) -> None:
        """Write `files`, then put them in force; if that fails, write `previous` back and re-raise."""
        await asyncio.to_thread(self._write, files, previous)
        try:
            await self._reconfigure()
        except FamiliarError:
            await asyncio.to_thread(self._write, previous, files)
            raise

    def _write(self, files: CharacterFiles, previous: CharacterFiles) -> None:
        """Both files, each atomically; the first is put back if the second cannot be written."""
        paths = self._paths
        targets = [
            (path, new, old)
            for path, new, old in (
                (paths.character_toml, files.toml, previous.toml),
                (paths.character_md, files.persona, previous.persona),
            )
            if new != old
        ]
        staged: list[tuple[Path, Path, str]] = []
        try:
            for path, new, old in targets:
                staged.append((path, _stage(path, new), old))
        except OSError as exc:
            for _path, tmp, _old in staged:
                tmp.unlink(missing_ok=True)
            raise FamiliarError(f"{exc.filename or paths.folder}: {_cannot(exc)}; nothing was saved") from exc
        replaced: list[tuple[Path, str]] = []
        try:
            for path, tmp, old in staged:
                os.replace(tmp, path)
                replaced.append((path, old))
        except OSError as exc:
            for _path, tmp, _old in staged:
                tmp.unlink(missing_ok=True)
            for path, old in replaced:
                with contextlib.suppress(OSError):
                    os.replace(_stage(path, old), path)
            raise FamiliarError(f"{exc.filename or paths.folder}: {_cannot(exc)}; nothing was saved") from exc

    # -- where it answers ------------------------------------------------------------------------
    async def channels(self, home: Sequence[int] = ()) -> ChannelCatalog:
        """The servers and channels to choose home channels from, by name; `home` ids seen nowhere
        come back in `unseen`."""
        try:
            known = await self._catalog.known_places()
        except STORE_FAILURES as exc:
            raise FamiliarError(f"cannot read the places the familiar knows: {exc}") from exc
        live = self._live_channels()
        names: dict[str, str] = {}
        servers: dict[int, bool] = {}  # id -> live
        channels: dict[int, tuple[int, bool]] = {}  # channel id -> (server id, live)
        for place, name in known.items():
            guild_text, _slash, channel_text = place.removeprefix("guild:").partition("/")
            if (
                not place.startswith("guild:")
                or not guild_text.isdigit()
                or (channel_text and not channel_text.isdigit())
            ):
                continue
            servers.setdefault(int(guild_text), False)
            if channel_text:
                channels.setdefault(int(channel_text), (int(guild_text), False))
            if name:
                names[place] = name
        for info in live or ():
            servers[info.guild_id] = True
            channels[info.channel_id] = (info.guild_id, True)
            names[f"guild:{info.guild_id}"] = info.guild_name
            names[f"guild:{info.guild_id}/{info.channel_id}"] = info.name
        table = NameTable(people={}, places=names, familiar_name=self._familiar_name())
        by_server: dict[int, list[ChannelChoice]] = {guild: [] for guild in servers}
        for channel_id, (guild, is_live) in channels.items():
            ref = table.place(f"guild:{guild}/{channel_id}")
            own = names.get(ref.key) or str(channel_id)
            by_server[guild].append(ChannelChoice(channel_id=channel_id, name=f"#{own}", place=ref, live=is_live))
        choices = sorted(
            (
                ServerChoice(
                    server=table.place(f"guild:{guild}"),
                    channels=tuple(sorted(by_server[guild], key=lambda c: (c.name.casefold(), c.channel_id))),
                    live=is_live,
                )
                for guild, is_live in servers.items()
            ),
            key=lambda s: (s.server.name.casefold(), s.server.key),
        )
        unseen = tuple(
            ChannelChoice(channel_id=channel_id, name=f"channel {channel_id} (not seen)", place=None, live=False)
            for channel_id in dict.fromkeys(home)
            if channel_id not in channels
        )
        return ChannelCatalog(servers=tuple(choices), unseen=unseen, connected=live is not None)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FamiliarError(f"{path}: {_cannot(exc, 'read')}") from exc


def _decoded(data: bytes, path: Path, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise FamiliarError(f"{path}: not valid UTF-8") from None


def _text(data: bytes | None, encoding: str) -> str:
    return "" if data is None else data.decode(encoding)


def _stage(path: Path, text: str) -> Path:
    """`text` in a temporary file beside `path`, with `path`'s permissions, ready to replace it."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if os.name == "posix":
            tmp.chmod(mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _cannot(exc: OSError, verb: str = "written") -> str:
    return f"cannot be {verb} ({exc.strerror or exc})"


def _toml(value: object) -> TomlValue:
    """A checked draft value as set_values writes it (a tuple of ids becomes a list)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str | int | float | bool | list):
        return value
    return str(value)


def _same(value: object, current: object) -> bool:
    """Whether a draft value is what the file holds already (then its key is left untouched)."""
    if isinstance(value, list | tuple) and isinstance(current, list | tuple):
        return list(value) == list(current)
    if isinstance(value, bool) or isinstance(current, bool):
        return value is current
    if isinstance(value, int | float) and isinstance(current, int | float):
        return float(value) == float(current)
    return type(value) is type(current) and value == current


def check_draft(draft: CharacterDraft, path: Path) -> tuple[FieldProblem, ...]:
    """What is wrong with each field of a draft of the character.toml at `path`, in the settings loader's
    words (no I/O: each value is checked alone, so one field's problem never hides another's)."""
    from app.config.editing import edited_text

    problems: list[FieldProblem] = []
    for name, key in FIELD_KEYS.items():
        value = typed_value(key, getattr(draft, name))
        try:
            parse_settings(edited_text("", path, {key: _toml(value)}), path)
        except ConfigError as exc:
            where = f"key '{exc.key}': " if exc.key else ""
            problems.append(FieldProblem(field=name, key=key, message=f"{where}{exc.problem}"))
    try:
        draft.persona.encode("utf-8")
    except UnicodeEncodeError:
        problems.append(FieldProblem(field="persona", key="character.md", message="not valid UTF-8"))
    return tuple(problems)


def count_character_tokens(text: str) -> int:
    """What `text` costs in the prompt, counted as the context budget counts it."""
    return int(_uncounted_tokens(text.strip()))
