"""Everything of a familiar that its files, secrets and environment decide, built in one place.

`load_familiar` reads and validates character.toml, character.md, the secrets and the environment
into a `Loaded`; `build_parts` turns a `Loaded` into the collaborators that depend on it (the reply
and background LLM clients, the embedder and the retriever, the persona, lorebook and memory layers
and their assembler, the memory workers and what they share). `Familiar.reconfigure()` does both
again and swaps the new `Parts` in whole, so no collaborator keeps a stale endpoint, key, persona
or setting while the others have moved on.

What does not depend on the settings (the store, its projections and embedding index, the change
broadcast, the facade's sub-APIs) is built once by the familiar and shared by every set (`Shared`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths, check_familiar_files, ensure_familiar, secure_familiar
from app.config.secrets import SecretStore
from app.config.settings import Secrets, Settings, apply_environment, config_error_at, load_settings
from app.lore.book import LoreProblem
from app.memory.derived import Projections
from app.memory.embeddings import Embedder, EmbeddingError, EmbeddingIndex, make_embedder
from app.memory.history import History
from app.memory.lore_state import LoreState
from app.runtime.context.assembler import Assembler
from app.runtime.context.layers import (
    CharacterLayer,
    DossiersLayer,
    HistoryLayer,
    MemoryLayer,
    ReflectionsLayer,
    SummaryLayer,
    check_layer_names,
)
from app.runtime.context.lore_layer import LorebookLayer, LoreFile
from app.runtime.errors import FamiliarError
from app.runtime.llm import LLMClient, LLMEndpoint
from app.runtime.projectors.base import MemoryProjector, ProjectorDeps
from app.runtime.projectors.registry import create_projectors, projector_names, unknown_projectors
from app.runtime.retrieval import Retriever


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a familiar is made of once its files are read and validated."""

    paths: FamiliarPaths
    settings: Settings
    secrets: Secrets
    persona: str


def load_familiar(paths: FamiliarPaths, secret_store: SecretStore, env: dict[str, str] | None = None) -> Loaded:
    """Create the familiar from the template if needed, then read and validate its files.

    Raises ConfigError (file, line, key) without writing anything but the template copy.
    """
    try:
        ensure_familiar(paths)
        secure_familiar(paths)
    except OSError as exc:
        where = Path(exc.filename) if exc.filename else paths.folder
        raise ConfigError(where, None, None, f"cannot be created or changed ({exc.strerror or exc})") from None
    check_familiar_files(paths)
    settings = apply_environment(load_settings(paths.character_toml), env)
    _check_names(settings, paths.character_toml)
    try:
        persona = paths.character_md.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(paths.character_md, None, None, "not valid UTF-8") from None
    except OSError as exc:
        raise ConfigError(paths.character_md, None, None, f"cannot be read ({exc.strerror or exc})") from None
    return Loaded(paths=paths, settings=settings, secrets=secret_store.load(env), persona=persona)


def _check_names(settings: Settings, path: Path) -> None:
    """Names the config schema cannot know (the projector registry, the layers) checked at load."""
    unknown = unknown_projectors(settings.providers.memory.projectors)
    if unknown:
        raise config_error_at(
            path,
            "providers.memory.projectors",
            f"unknown projector {unknown[0]!r} (known: {', '.join(projector_names())})",
        )
    for channel, section in settings.channels.items():
        problem = check_layer_names(section.prompt_layers)
        if problem:
            raise config_error_at(path, f"channels.{channel}.prompt_layers", problem)


@dataclass(frozen=True, slots=True)
class Shared:
    """What every set of parts is built over, kept across reconfigurations."""

    history: History
    projections: Projections
    embeddings: EmbeddingIndex
    on_lore_disabled: Callable[[list[LoreProblem]], None]
    lore_file: LoreFile  # lorebook.toml as in use, and its timed effects: they outlive a rebuilt layer
    lore_state: LoreState


@dataclass(frozen=True, slots=True)
class Parts:
    """The collaborators built from one `Loaded`; replaced together, never one by one."""

    loaded: Loaded
    reply_llm: LLMClient
    background_llm: LLMClient
    embedder: Embedder | None
    retriever: Retriever
    lorebook: LorebookLayer
    assembler: Assembler
    projector_deps: ProjectorDeps
    projectors: tuple[MemoryProjector, ...]

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    async def retire(self) -> None:
        """Replaced by a newer set: the LLM clients close once the requests in flight on them end."""
        await self.reply_llm.retire()
        await self.background_llm.retire()

    async def aclose(self) -> None:
        await self.reply_llm.aclose()
        await self.background_llm.aclose()


def build_parts(loaded: Loaded, shared: Shared, previous: Parts | None = None) -> Parts:
    """Every settings-dependent collaborator from `loaded`. Builds nothing that needs I/O (models load
    on first use); raises FamiliarError naming the file and section when a part cannot be made.

    The embedder of `previous` is kept when the embedding settings did not change, so a
    reconfiguration does not load the same sentence model again."""
    settings = loaded.settings
    embedder = _embedder(loaded, previous)
    retriever = Retriever(shared.history, settings.memory.retrieval, embedder, shared.embeddings)
    lorebook = LorebookLayer(shared.lore_file, shared.lore_state, on_disabled=shared.on_lore_disabled)
    assembler = Assembler(
        [
            CharacterLayer(loaded.persona),
            lorebook,
            SummaryLayer(shared.projections),
            ReflectionsLayer(shared.projections),
            DossiersLayer(shared.projections),
            MemoryLayer(retriever),
            HistoryLayer(),
        ]
    )
    background_llm = LLMClient(LLMEndpoint.for_background(settings.llm, loaded.secrets))
    deps = ProjectorDeps(
        history=shared.history,
        projections=shared.projections,
        llm=background_llm,
        settings=settings,
        embedder=embedder,
        embeddings=shared.embeddings,
    )
    return Parts(
        loaded=loaded,
        reply_llm=LLMClient(LLMEndpoint.for_replies(settings.llm, loaded.secrets)),
        background_llm=background_llm,
        embedder=embedder,
        retriever=retriever,
        lorebook=lorebook,
        assembler=assembler,
        projector_deps=deps,
        projectors=tuple(create_projectors(settings.providers.memory.projectors, deps)),
    )


def _embedder(loaded: Loaded, previous: Parts | None) -> Embedder | None:
    embedding = loaded.settings.providers.embedding
    if previous is not None and previous.settings.providers.embedding == embedding:
        return previous.embedder
    try:
        return make_embedder(
            embedding.backend,
            model=embedding.model,
            model_dir=Path(embedding.model_dir) if embedding.model_dir else None,
            cache_root=loaded.paths.root,
        )
    except EmbeddingError as exc:
        raise FamiliarError(f"{loaded.paths.character_toml}: [providers.embedding]: {exc}") from exc
