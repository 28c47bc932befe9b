"""fact_embedding (opt-in): vectors for current facts, keyed (fact_id, model).

The watermark is implicit: the facts lacking a row for the active model. A model change, a deleted
side-index or a new fact all converge on the same idempotent backfill.
"""

from __future__ import annotations

import asyncio

from app.memory.pauses import PauseState
from app.runtime.projectors.base import ProjectorBase

BATCH = 32
MAX_BATCHES_PER_TICK = 8
IDLE = "idle: set [providers.embedding] backend to hash or fastembed"


class FactEmbeddingProjector(ProjectorBase):
    name = "fact_embedding"

    async def run(self) -> str | None:
        if self._deps.embedder is None or self._deps.embeddings is None:  # said whether paused or not
            self.report(IDLE)
            return IDLE
        return await super().run()

    async def tick(self, _pause: PauseState) -> None:
        embedder, index = self._deps.embedder, self._deps.embeddings
        if embedder is None or index is None:
            return  # run() has said why
        total = 0
        for _ in range(MAX_BATCHES_PER_TICK):
            missing = await index.missing(embedder.name, BATCH)
            if not missing:
                break
            vectors = await asyncio.to_thread(embedder.embed, [text for _id, text in missing])
            total += await index.put(
                embedder.name, embedder.dim, [(fid, v) for (fid, _t), v in zip(missing, vectors, strict=True)]
            )
        if total:
            self.report(f"embedded {total} facts with {embedder.name}")
