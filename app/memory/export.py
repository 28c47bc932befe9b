"""Export and import of a whole memory as versioned JSON lines.

Line 1 is a header {"format": "familiar-memory", "version": 1}; every other line is one record with
a "kind": turn, deleted_source, fact (both time axes, status log, sources), tombstone (a hash, never
text), tombstone_key, or an extra kind the runtime adds (lore). Import goes into an empty familiar in
one transaction, keeping ids, so every `as_of` answer is reproduced; a bad line changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from app.memory.errors import StoreError
from app.memory.store import Store

FORMAT = "familiar-memory"
VERSION = 1

_TURN = (
    "id, platform, place, guild_id, channel_id, message_id, author_key, author_name, content, mode, created_at,"
    " revision, redacted, reply_to, superseded, origin_id"
)
_FACT = (
    "id, content, dedup_key, type, importance, confidence, subjects, sources, speaker, scope, status, revision, origin,"
    " created_at, superseded_at, superseded_by, valid_from, valid_to, snoozed_until"
)
_TABLES: dict[str, tuple[str, str]] = {
    "turn": ("turns", _TURN),
    "deleted_source": ("deleted_sources", "platform, message_id, deleted_at"),
    "fact": ("facts", _FACT),
    "tombstone": ("tombstones", "id, hash, reason, created_at, lifted_at"),
}


def _names(columns: str) -> list[str]:
    return [c.strip() for c in columns.split(",")]


async def export_records(store: Store, batch: int = 5000) -> AsyncIterator[dict[str, Any]]:
    """Every record of the memory, header first, in an order import can replay."""
    yield {"kind": "header", "format": FORMAT, "version": VERSION}
    key = await store.read_one("SELECT value FROM store_meta WHERE key = 'tombstone_key'")
    if key is not None:
        yield {"kind": "tombstone_key", "value": bytes(key[0]).hex()}
    for kind, (table, columns) in _TABLES.items():
        names = _names(columns)
        order = "rowid"
        last = -1
        while True:
            rows = await store.read_all(
                f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? ORDER BY {order} LIMIT ?", (last, batch)
            )
            if not rows:
                break
            for row in rows:
                last = int(row[0])
                record: dict[str, Any] = {"kind": kind, **dict(zip(names, row[1:], strict=True))}
                if kind == "fact":
                    record["subjects"] = json.loads(record["subjects"])
                    record["sources"] = json.loads(record["sources"])
                    log = await store.read_all(
                        "SELECT status, at FROM fact_status_log WHERE fact_id = ? ORDER BY rowid", (record["id"],)
                    )
                    record["status_log"] = [{"status": s, "at": a} for s, a in log]
                yield record


def _field(record: dict[str, Any], name: str, line: int) -> Any:
    if name not in record:
        raise StoreError(f"line {line}: a {record.get('kind')} record lacks '{name}'; nothing was imported")
    return record[name]


async def import_records(store: Store, lines: Iterable[str]) -> dict[str, int]:
    """Replay exported records into an empty store, in one transaction. Returns counts per kind.

    Records of kinds this module does not know are returned untouched through `extras` by the
    caller's own handling: here they are an error unless listed in `passthrough`.
    """
    counts: dict[str, int] = {}
    existing = await store.read_one("SELECT (SELECT COUNT(*) FROM turns) + (SELECT COUNT(*) FROM facts)")
    if existing is not None and existing[0]:
        raise StoreError("import needs an empty familiar (this one already has turns or facts); nothing was changed")
    header_seen = False
    async with store.transaction() as conn:
        # A fact may point at a later fact (superseded_by); check references when the import commits.
        await conn.execute("PRAGMA defer_foreign_keys = ON")
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise StoreError(f"line {number}: not JSON ({exc.msg}); nothing was imported") from None
            if not isinstance(record, dict) or "kind" not in record:
                raise StoreError(f"line {number}: not a record with a 'kind'; nothing was imported")
            kind = record["kind"]
            if not header_seen:
                if kind != "header" or record.get("format") != FORMAT:
                    raise StoreError(f"line {number}: not a Familiar memory export; nothing was imported")
                if record.get("version") != VERSION:
                    raise StoreError(
                        f"line {number}: export version {record.get('version')} is not supported (this Familiar"
                        f" reads version {VERSION}); nothing was imported"
                    )
                header_seen = True
                continue
            if kind == "tombstone_key":
                try:
                    value = bytes.fromhex(str(_field(record, "value", number)))
                except ValueError:
                    raise StoreError(f"line {number}: the tombstone key is not hex; nothing was imported") from None
                await conn.execute(
                    "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('tombstone_key', ?)", (value,)
                )
            elif kind in _TABLES:
                table, columns = _TABLES[kind]
                names = _names(columns)
                values = [_field(record, n, number) for n in names]
                if kind == "fact":
                    values[names.index("subjects")] = json.dumps(list(record["subjects"]))
                    values[names.index("sources")] = json.dumps([int(t) for t in record["sources"]])
                marks = ",".join("?" * len(names))
                try:
                    await conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", values)
                    if kind == "fact":
                        # The insert trigger filled subjects, sources and a first status entry; the
                        # exported log replaces that entry so as-of reads see the real history.
                        fact_id = int(record["id"])
                        await conn.execute("DELETE FROM fact_status_log WHERE fact_id = ?", (fact_id,))
                        await conn.executemany(
                            "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, ?, ?)",
                            [(fact_id, e["status"], e["at"]) for e in record.get("status_log", [])],
                        )
                except Exception as exc:  # any SQL refusal becomes one clear line
                    raise StoreError(
                        f"line {number}: the {kind} record was refused ({exc}); nothing was imported"
                    ) from exc
            else:
                counts[f"skipped:{kind}"] = counts.get(f"skipped:{kind}", 0) + 1
                continue
            counts[kind] = counts.get(kind, 0) + 1
    if not header_seen:
        raise StoreError("the file is empty; nothing was imported")
    return counts
