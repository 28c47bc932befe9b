"""Token costing and packing.

The cost of a block is always measured on the exact text that goes into the prompt, framing
included: the packer re-costs the whole rendered block each time it considers one more item, so
headers, separators and per-item framing can never push a block past its budget.

Token counts are an estimate that errs high for the BPE tokenizers chat models use: a run of
letters costs one token per four letters (rounded up), every digit and every other visible
character costs one, and whitespace is free (BPE folds it into the next token).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_LETTER_RUN = re.compile(r"[A-Za-z]+")
_OTHER = re.compile(r"[^\sA-Za-z]")


@functools.lru_cache(maxsize=2048)
def count_tokens(text: str) -> int:
    """Letters runs cost ceil(len / 4); every other visible character costs one; whitespace is free.
    (Cached: lore entries and framing strings are costed again and again.)"""
    return len(_OTHER.findall(text)) + sum((len(run) + 3) // 4 for run in _LETTER_RUN.findall(text))


Cost = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class Packed:
    text: str  # the rendered block ("" when nothing fits)
    cost: int  # cost(text): never above the budget
    included: tuple[int, ...]  # indices of the items that made it, in the order given
    dropped: tuple[int, ...]  # indices the budget or the item cap left out


def pack(
    items: Sequence[str],
    budget: int,
    render: Callable[[Sequence[str]], str],
    *,
    max_items: int | None = None,
    cost: Cost = count_tokens,
) -> Packed:
    """Greedily keep items (best first) while the rendered block stays within `budget`.

    `render` turns the kept items into the final block text (header, per-item framing, footer);
    it must return "" for no items. An item that does not fit is dropped, and later, smaller
    items may still fit.

    Each item is costed once and the framing once: with the default costing, a block whose items
    are joined by whitespace costs exactly framing + the sum of its items. The final text is then
    costed exactly; if a `render` or `cost` breaks that additivity, the packer falls back to
    re-costing the whole block for every candidate, so the budget holds either way.
    """
    if not items:
        return Packed(text="", cost=0, included=(), dropped=())
    framing = cost(render([items[0]])) - cost(items[0])
    kept: list[int] = []
    dropped: list[int] = []
    spent = framing
    for index, item in enumerate(items):
        item_cost = cost(item)
        if (max_items is not None and len(kept) >= max_items) or spent + item_cost > budget:
            dropped.append(index)
        else:
            kept.append(index)
            spent += item_cost
    text = render([items[i] for i in kept]) if kept else ""
    exact = cost(text)
    if exact == (spent if kept else 0) and exact <= budget:
        return Packed(text=text, cost=exact, included=tuple(kept), dropped=tuple(dropped))
    return _pack_exactly(items, budget, render, max_items, cost)


def _pack_exactly(
    items: Sequence[str], budget: int, render: Callable[[Sequence[str]], str], max_items: int | None, cost: Cost
) -> Packed:
    kept: list[int] = []
    dropped: list[int] = []
    text = ""
    spent = 0
    for index, _item in enumerate(items):
        if max_items is not None and len(kept) >= max_items:
            dropped.append(index)
            continue
        trial = render([items[i] for i in [*kept, index]])
        trial_cost = cost(trial)
        if trial_cost <= budget:
            kept.append(index)
            text, spent = trial, trial_cost
        else:
            dropped.append(index)
    return Packed(text=text, cost=spent, included=tuple(kept), dropped=tuple(dropped))


def truncate_to_budget(text: str, budget: int, render: Callable[[str], str], cost: Cost = count_tokens) -> str:
    """The longest prefix of `text` (cut at a word boundary, marked with an ellipsis) whose rendered
    block fits the budget; "" when not even the framing fits."""
    if cost(render(text)) <= budget:
        return render(text)
    low, high = 0, len(text)
    best = ""
    while low <= high:
        middle = (low + high) // 2
        head = text[:middle]
        if middle < len(text) and " " in head:
            head = head[: head.rfind(" ")]
        candidate = render(head.rstrip() + " …") if head.strip() else ""
        if candidate and cost(candidate) <= budget:
            best = candidate
            low = middle + 1
        else:
            high = middle - 1
    return best
