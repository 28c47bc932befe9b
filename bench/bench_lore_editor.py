"""The lorebook editor pane at 5,000 entries: the table's filter (target: <= 50 ms per keystroke), through the
Qt model the table shows (filter, sort, model reset), and the rows rebuilt after an edit.

The book: 5,000 entries with one to four keys each (some multi-word, some regex), titles, a sentence or
three of content, a tenth disabled, a few constant. The queries are what a user types: a bare word, a
scoped `key:` / `title:` / `content:` term, two terms at once, `is:disabled`, and a word that matches
nothing; each is timed as typed, one prefix after another (one filter per keystroke).

Baseline, in the same run on the same rows and queries: the same filter lowering each row's fields at
every keystroke (what a filter over the view records without prepared search texts would do).

    python -m bench.bench_lore_editor [--entries N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence

from app.runtime.api.views import LoreEntryView
from app.ui.models.lore_rows import LoreRow, filter_rows, make_row, parse_query

QUERIES = ("lantern", "key:harb", "title:gull", "content:storm", "key:mar content:fish", "is:disabled", "zzzyx")
WORDS = (
    "lantern",
    "harbour",
    "market",
    "gull",
    "point",
    "lighthouse",
    "storm",
    "ferry",
    "island",
    "chowder",
    "cello",
    "candle",
    "spirit",
    "bell",
    "tide",
    "sardine",
    "baker",
    "bread",
    "stall",
    "river",
    "porto",
    "keeper",
    "lamp",
    "room",
    "pier",
    "spring",
    "winter",
    "captain",
    "anchor",
    "rope",
    "net",
    "salt",
)


def book(count: int, rng: random.Random) -> list[LoreEntryView]:
    entries = []
    for i in range(count):
        title = " ".join(rng.choice(WORDS).capitalize() for _ in range(rng.randint(1, 3))) + f" {i}"
        keys: list[str] = [rng.choice(WORDS) for _ in range(rng.randint(1, 3))]
        if i % 7 == 0:
            keys.append(f"{rng.choice(WORDS)} {rng.choice(WORDS)}")
        if i % 20 == 0:
            keys.append(f"/{rng.choice(WORDS)}s?/i")
        content = ". ".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(rng.randint(1, 3))) + "."
        entries.append(
            LoreEntryView(
                ref=i,
                title=title,
                keys=tuple(dict.fromkeys(keys)),
                secondary_keys=(rng.choice(WORDS),) if i % 5 == 0 else (),
                content=content,
                enabled=i % 10 != 3,
                constant=i % 250 == 0,
                priority=rng.randint(0, 100),
                tokens=len(content) // 4,
            )
        )
    return entries


def baseline_filter(rows: Sequence[LoreRow], query: str) -> list[LoreRow]:
    """The same terms, lowering the fields at every call."""
    kept = list(rows)
    for term in parse_query(query):
        text = term.text
        if term.scope == "title":
            kept = [r for r in kept if text in r.entry.title.lower()]
        elif term.scope == "key":
            kept = [r for r in kept if text in "\n".join((*r.entry.keys, *r.entry.secondary_keys)).lower()]
        elif term.scope == "content":
            kept = [r for r in kept if text in r.entry.content.lower()]
        elif term.scope == "is":
            kept = [r for r in kept if not r.entry.enabled] if text == "disabled" else kept
        else:
            kept = [
                r
                for r in kept
                if text in r.entry.title.lower()
                or text in "\n".join((*r.entry.keys, *r.entry.secondary_keys)).lower()
                or text in r.entry.content.lower()
            ]
    return kept


def _keystrokes(query: str) -> list[str]:
    return [query[:n] for n in range(1, len(query) + 1)]


def _time(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _line(name: str, samples: list[float]) -> str:
    return (
        f"{name}: p50 {_pct(samples, 0.5):.2f} ms  p95 {_pct(samples, 0.95):.2f} ms"
        f"  mean {statistics.fmean(samples):.2f} ms  max {max(samples):.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QTableView

    from app.ui.models.lore_model import COLUMN_NAMES, LoreTableModel

    app = QApplication.instance() or QApplication([])
    rng = random.Random(7)
    entries = book(args.entries, rng)
    build = [_time(lambda: [make_row(i, e) for i, e in enumerate(entries)]) for _ in range(args.runs)]
    rows = [make_row(i, e) for i, e in enumerate(entries)]

    def rebuild_after_one_edit() -> list[LoreRow]:
        # the pane's path after an edit: rows of unchanged entries are kept, the edited one is made again
        edited = list(entries)
        edited[len(edited) // 2] = LoreEntryView(ref=len(edited) // 2, title="Edited", keys=("edited",))
        return [
            old if old.entry is entry else make_row(i, entry)
            for i, (old, entry) in enumerate(zip(rows, edited, strict=True))
        ]

    reuse = [_time(rebuild_after_one_edit) for _ in range(args.runs * 4)]
    ours: list[float] = []
    base: list[float] = []
    for _ in range(args.runs):
        for query in QUERIES:
            for typed in _keystrokes(query):
                base.append(_time(lambda t=typed: baseline_filter(rows, t)))  # type: ignore[misc]
                ours.append(_time(lambda t=typed: filter_rows(rows, t)))  # type: ignore[misc]
    model = LoreTableModel()
    view = QTableView()
    view.setModel(model)
    view.resize(1000, 700)
    view.show()
    app.processEvents()  # bench only: let the offscreen view lay out once (never in the app)
    model.set_rows(rows)
    through_model: list[float] = []
    sorted_model: list[float] = []
    for _ in range(args.runs):
        for query in QUERIES:
            for typed in _keystrokes(query):
                through_model.append(_time(lambda t=typed: model.set_query(t)))  # type: ignore[misc]
        model.set_query("")
    model.sort(COLUMN_NAMES.index("priority"), Qt.SortOrder.DescendingOrder)
    for _ in range(args.runs):
        for query in QUERIES:
            for typed in _keystrokes(query):
                sorted_model.append(_time(lambda t=typed: model.set_query(t)))  # type: ignore[misc]
        model.set_query("")
    sort_times = [
        _time(lambda c=c: model.sort(COLUMN_NAMES.index(c), Qt.SortOrder.AscendingOrder))  # type: ignore[misc]
        for c in ("title", "tokens", "keys", "#")
        for _ in range(args.runs)
    ]
    print(f"lorebook editor at {args.entries:,} entries, {len(ours)} keystrokes ({args.runs} runs of {QUERIES}):")
    print("  " + _line("editor filter (rows)              ", ours))
    print("  " + _line("baseline: lowering at each key    ", base))
    print(f"  p95 ratio editor / baseline: {_pct(ours, 0.95) / _pct(base, 0.95):.2f}")
    print("  " + _line("editor filter through the model   ", through_model) + "  (target p95 <= 50 ms)")
    print("  " + _line("the same, sorted by priority      ", sorted_model))
    print("  " + _line("sort by a column                  ", sort_times))
    print("  " + _line("every row made (a load)           ", build))
    print("  " + _line("rows after one edit (kept rows)   ", reuse))
    view.close()


if __name__ == "__main__":
    main()
