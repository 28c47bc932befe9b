"""fact_embedding (opt-in): vectors for current facts, keyed (fact_id, model).

The watermark is implicit: the facts lacking a row for the active model. A model change, a deleted
side-index or a new fact all converge on the same idempotent backfill.
"""

from __future__ import annotations

import asyncio

from app.runtime.projectors.base import ProjectorBase

BATCH = 32
MAX_BATCHES_PER_TICK = 8


class FactEmbeddingProjector(ProjectorBase):
    name = "fact_embedding"

    async def run(self) -> None:
        deps = self._deps
        embedder, index = deps.embedder, deps.embeddings
        if embedder is None or index is None:
            deps.report(self.name, "idle: set [providers.embedding] backend to hash or fastembed")
            return
        if (await deps.pause()).paused("learning", "*"):
            return
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
            deps.report(self.name, f"embedded {total} facts with {embedder.name}")
