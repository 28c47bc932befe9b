"""A real familiar whose indexes a test can steer: quick lock retries, a small commit batch, an index that
holds its build half-way (tests/memory/test_index_lock.py `HoldingIndex`), and an embedder that holds
after its first batches. Used by the runtime tests of `facade.indexes` and by the index health pane's."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.embeddings import Embedder
from app.memory.fts import FtsIndex, IndexTiming
from app.memory.history import History
from app.memory.records import IndexHealth
from app.runtime.service import Familiar, load_familiar
from tests.conftest import write_character_toml
from tests.memory.test_fts import FLUSH

QUICK = IndexTiming(poll_interval=0.05, locked_retry_first=0.05, locked_retry_max=0.2)
HASH_EMBEDDINGS = '[providers.embedding]\nbackend = "hash"\n'
NO_DISCORD = "http://127.0.0.1:9/api"  # never contacted: these familiars are not started
NO_LLM = "http://127.0.0.1:9/v1"


def workers(*names: str) -> str:
    """The TOML for these memory workers, ticking quickly."""
    listed = ", ".join(f'"{n}"' for n in names)
    return f"[providers.memory]\nprojectors = [{listed}]\n\n[memory.learning]\ntick_seconds = 0.05\n"


async def open_familiar(
    paths: FamiliarPaths,
    extra: str = "",
    *,
    index: FtsIndex | None = None,
    batch_size: int = 5000,
    timing: IndexTiming | None = QUICK,
) -> Familiar:
    """`Familiar.open` with the index knobs a test needs (character.toml written with `extra`)."""
    write_character_toml(paths, NO_DISCORD, "ws://127.0.0.1:9/", NO_LLM, extra)
    secrets = SecretStore(paths.name, paths.secrets_file, use_keyring=False)
    loaded = load_familiar(paths, secrets, env={})
    opened: list[Familiar] = []

    def on_health(health: IndexHealth) -> None:
        if opened:
            opened[0]._on_index_health(health)  # what Familiar.open wires up

    history = await History.open(
        paths.history_db,
        paths.fts,
        paths.backups,
        on_health=on_health,
        index=index,
        batch_size=batch_size,
        index_timing=timing,
    )
    familiar = Familiar(loaded, history, secrets, {})
    opened.append(familiar)
    await familiar.changes.prime()
    return familiar


class HeldEmbedder:
    """Holds the familiar's own embedder (same name, same vectors) before its batch number `hold_at` until
    the test lets it go on: a re-embed can be looked at, and cancelled, half-way. It wraps the instance's
    `embed` in place, so the familiar keeps the embedder its settings built."""

    def __init__(self, embedder: Embedder | None, hold_at: int = 2) -> None:
        assert embedder is not None, "embeddings are off in this familiar"
        self._embed = embedder.embed
        self.hold_at = hold_at
        self.batches = 0
        self.reached = threading.Event()
        self.release = threading.Event()
        setattr(embedder, "embed", self.embed)  # noqa: B010 (an instance attribute over the method)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches += 1
        if self.batches == self.hold_at:
            self.reached.set()
            assert self.release.wait(FLUSH), "the test never let the embedder go on"
        return self._embed(texts)
