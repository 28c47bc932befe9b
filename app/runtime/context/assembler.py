"""The assembler: runs the context layers of a reply in order, reusing a layer's last output while
its invalidation key is unchanged, and records what went into the prompt (the reply's explanation)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from app.runtime.context.layers import DEFAULT_ORDER, Layer, LayerOutput, ReplyContext
from app.runtime.llm import ChatMessage

CACHE_PER_LAYER = 32  # a few channels alternating keep their entries


@dataclass(frozen=True, slots=True)
class Assembly:
    messages: list[ChatMessage]
    outputs: tuple[LayerOutput, ...]
    cached: tuple[str, ...]  # layers whose output was reused
    explanation: dict[str, Any]


class Assembler:
    def __init__(self, layers: Sequence[Layer]) -> None:
        self._layers = {layer.name: layer for layer in layers}
        self._cache: dict[str, OrderedDict[Hashable, LayerOutput]] = {name: OrderedDict() for name in self._layers}

    @property
    def layer_names(self) -> tuple[str, ...]:
        return tuple(self._layers)

    def clear(self) -> None:
        for cache in self._cache.values():
            cache.clear()

    async def _run(self, layer: Layer, ctx: ReplyContext) -> tuple[LayerOutput, bool]:
        key = layer.invalidation_key(ctx)
        cache = self._cache[layer.name]
        if key is not None and key in cache:
            cache.move_to_end(key)
            return cache[key], True
        output = await layer.build(ctx)
        if key is not None:
            cache[key] = output
            while len(cache) > CACHE_PER_LAYER:
                cache.popitem(last=False)
        return output, False

    async def assemble(self, ctx: ReplyContext, order: Sequence[str] = ()) -> Assembly:
        started = time.perf_counter()
        names = [n for n in (order or DEFAULT_ORDER) if n in self._layers]
        # Layers are independent: they build side by side (their reads and index searches overlap).
        results = await asyncio.gather(*(self._run(self._layers[name], ctx) for name in names))
        outputs = [output for output, _hit in results]
        cached = [name for name, (_output, hit) in zip(names, results, strict=True) if hit]
        system = "\n\n".join(o.text for o in outputs if o.text)
        messages: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
        for output in outputs:
            messages.extend(output.messages)
        explanation = _explain(ctx, outputs, cached, (time.perf_counter() - started) * 1000)
        return Assembly(messages=messages, outputs=tuple(outputs), cached=tuple(cached), explanation=explanation)


def _explain(ctx: ReplyContext, outputs: Sequence[LayerOutput], cached: Sequence[str], ms: float) -> dict[str, Any]:
    by_name = {o.name: o for o in outputs}
    lore = by_name.get("lorebook")
    memory = by_name.get("memory")
    return {
        "place": ctx.place,
        "tier": ctx.tier,
        "recall_paused": ctx.recall_paused,
        "assembly_ms": round(ms, 3),
        "layers": [
            {
                "name": o.name,
                "tokens": o.cost,
                "budget": o.budget,
                "cached": o.name in cached,
                **({"note": o.note} if o.note else {}),
            }
            for o in outputs
        ],
        "lorebook": list(lore.items) if lore else [],
        "lorebook_activation": dict(lore.details) if lore else {},  # seed, message clock, recursion steps
        "facts": [i for i in memory.items if "fact_id" in i] if memory else [],
        "turns": [i for i in memory.items if "turn_id" in i] if memory else [],
        "dropped": [{"layer": o.name, **d} for o in outputs for d in o.dropped],
    }
