"""Rules the code enforces on facts, never left to the model: normalization, near-duplicate keys,
tombstone hashes, directive language, auto-promotion and scope visibility."""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from collections.abc import Iterable

from app.memory.errors import BadInputError

FACT_TYPES = ("episodic", "semantic", "procedural")
TYPE_WEIGHTS = {"semantic": 1.0, "procedural": 0.9, "episodic": 0.7}
STATUSES = ("pending", "active", "rejected", "archived", "forgotten")
AUTO_PROMOTE_CONFIDENCE = 0.8

_SURROUNDING = "\"'`“”‘’«».,;:!?()[]{}<>-–—*_ \t\n"
_DIRECTIVE = re.compile(
    r"\b(always|never|must|mustn't|should always|from now on|henceforth|rule|rules|obey|ignore (all|previous)"
    r"|system prompt|you are now|instructions?)\b",
    re.IGNORECASE,
)
_CREDENTIAL = re.compile(
    r"(sk-[A-Za-z0-9_\-]{16,}"  # OpenAI-style keys
    r"|[MN][A-Za-z\d_\-]{23,27}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,}"  # Discord bot tokens
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|AKIA[0-9A-Z]{16}"  # AWS access key ids
    r"|\b(password|passwd|passphrase|api[ _-]?key|secret key|token)\b\s*(is|:|=)"
    r"|\b[A-Fa-f0-9]{32,}\b"  # long hex secrets
    r"|\b[A-Za-z0-9+/]{40,}={0,2})",  # long base64 blobs
    re.IGNORECASE,
)
# Discord ids in ASCII digits without a leading zero: `\d` would also take other scripts' digits
# ("guild:１" is not guild:1 but would be stored as a different place), and "01" would be a second
# spelling of 1. Matched with fullmatch, so no anchors (a `$` would let a trailing newline through).
_ID = r"(?:0|[1-9][0-9]{0,19})"
_PLACE = re.compile(rf"local|familiar|dm:{_ID}|guild:{_ID}(/{_ID})?")
_PLACE_SHAPE = re.compile(r"(?:dm|guild):(?P<first>[^/]*)(?:/(?P<second>.*))?", re.DOTALL)
PLACE_FORMS = "dm:<user id>, guild:<guild id>, guild:<guild id>/<channel id> or local"


def normalize_text(text: str) -> str:
    """Lowercased, whitespace-collapsed, surrounding quotes/punctuation stripped, NFKC."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = " ".join(folded.split())
    return collapsed.strip(_SURROUNDING)


def normalize_subjects(subjects: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({s.strip() for s in subjects if s.strip()}))


def dedup_key(text: str, subjects: Iterable[str]) -> str:
    """The near-duplicate key: exact match after normalization, per subject set."""
    material = normalize_text(text) + "\x1f" + "\x1e".join(normalize_subjects(subjects))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def tombstone_hash(secret: bytes, text: str, subjects: Iterable[str]) -> str:
    """A content-free, keyed hash of normalized text + subjects (cannot be reversed without the key)."""
    material = normalize_text(text) + "\x1f" + "\x1e".join(normalize_subjects(subjects))
    return hmac.new(secret, material.encode("utf-8"), hashlib.sha256).hexdigest()


def looks_directive(text: str) -> bool:
    """Directive language or a credential-looking string: such a fact always waits for the owner."""
    return bool(_DIRECTIVE.search(text) or _CREDENTIAL.search(text))


def auto_promotes(fact_type: str, confidence: float, text: str) -> bool:
    """Only episodic facts with confidence >= 0.8 and no directive language go straight to active."""
    return fact_type == "episodic" and confidence >= AUTO_PROMOTE_CONFIDENCE and not looks_directive(text)


def valid_place(place: str) -> bool:
    return isinstance(place, str) and _PLACE.fullmatch(place) is not None


def place_problem(place: object) -> str | None:
    """What is wrong with a place (WHERE), in words; None when it is one.

    Every command that takes WHERE and every stored place goes through `valid_place`; this says why
    one was refused: an id written with other digits than ASCII 0-9, an id with a leading zero, or
    not the shape of a place at all.
    """
    if isinstance(place, str) and _PLACE.fullmatch(place):
        return None
    shown = repr(place) if not isinstance(place, str) else "'" + place.encode("unicode_escape").decode("ascii") + "'"
    shape = _PLACE_SHAPE.fullmatch(place) if isinstance(place, str) else None
    if shape is not None:
        for part in (shape["first"], shape["second"]):
            if part is None:
                continue
            odd = next((ch for ch in part if ch.isdigit() and ch not in "0123456789"), None)
            if odd is not None:
                return (
                    f"{shown} is not a place: ids are written with the ASCII digits 0-9"
                    f" ({odd!r} is U+{ord(odd):04X}, {unicodedata.name(odd, 'a digit of another script')})"
                )
            if len(part) > 1 and part.startswith("0") and part.isascii() and part.isdigit():
                return f"{shown} is not a place: the id {part} starts with 0 (write it without leading zeros)"
    return f"{shown} is not a place: use {PLACE_FORMS}"


def fact_scope(place: str, *, channel_scoped: bool) -> str:
    """Where a fact learned at `place` may be recalled.

    A DM fact stays in that DM; a guild fact in that guild (or that channel when the guild is set to
    channel scope); the local chat keeps its own. Anything else is quarantined.
    """
    if not valid_place(place):
        return "quarantine"
    if place.startswith("guild:") and "/" in place and not channel_scoped:
        return place.split("/", 1)[0]
    return place


def scope_reaches(scope: str, place: str) -> bool:
    """Whether a fact of `scope` is recalled where a message at `place` was heard."""
    return place == scope or (scope.startswith("guild:") and "/" not in scope and place.startswith(scope + "/"))


def visible_scopes(where: str) -> tuple[str, ...]:
    """The scopes recall may read at `where`: that place (and its guild), plus the familiar's own.

    A quarantined fact is never visible; a DM never sees a guild's facts and the reverse.
    """
    if where == "familiar":  # the familiar's own scope is not a place anyone speaks in
        raise BadInputError(f"'{where}' is not a place: use {PLACE_FORMS}")
    problem = place_problem(where)
    if problem is not None:
        raise BadInputError(problem)
    if where.startswith("guild:") and "/" in where:
        return (where, where.split("/", 1)[0], "familiar")
    return (where, "familiar")
