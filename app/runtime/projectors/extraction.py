"""The rich_note extractor's output contract: what the model is asked for and what the code lets through.

The model reads, the code decides. `parse_extraction` first decodes the answer strictly - one JSON object
`{"facts": [...]}`, exactly the documented fields, enums, ranges, at most `MAX_FACTS` facts, sources among the
turns the model was shown, speakers and subjects among the batch's participants. Anything wrong makes the whole
answer garbage (`ExtractionError`): the caller retries once and then drops the batch whole, so no partial batch
ever lands. A well-formed answer then goes through the policy filters: facts that would mint an identity from play
or from a name are dropped (each with a reason), claims are stored attributed, bits are stored as bits.

Pure code, no I/O: the extractor owns the LLM call, the retry and the store.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, NoReturn

from app.memory.facts import NewFact
from app.memory.policy import AUTO_PROMOTE_CONFIDENCE, FACT_TYPES
from app.memory.records import SELF_KEY, Turn

MAX_FACTS = 20
MAX_ANSWER_BYTES = 64 * 1024
MAX_DEPTH = 6  # {"facts": [{"subjects": [...]}]} needs 4
MAX_CONTENT_CHARS = 500
MAX_SUBJECTS = 8
CLAIM_CONFIDENCE_CAP = 0.7
BIT_CONFIDENCE_CAP = 0.5
ACTIVITY_RETURN_MODE = "activity_return"
KINDS = ("fact", "claim", "bit")
BIT_PREFIX = "In role-play: "

# Both caps sit below the auto-promotion threshold: a claim or a bit always waits for the owner.
assert max(CLAIM_CONFIDENCE_CAP, BIT_CONFIDENCE_CAP) < AUTO_PROMOTE_CONFIDENCE

_REQUIRED = ("content", "type", "kind", "importance", "confidence", "subjects", "speaker", "source_turn_ids")
_OPTIONAL = ("valid_from", "valid_to")
_FENCE = re.compile(r"```[ \t]*(?:json\b)?\s*(?P<body>.*?)\s*```", re.DOTALL | re.IGNORECASE)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?(?:Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
_IDENTITY = re.compile(
    r"\b(?:i\s+am|i['’]m|no,?\s+i\s+am|is\s+actually|is\s+really|is\s+secretly|real\s+name|is\s+called|is\s+named"
    r"|goes\s+by|same\s+person|alias|aka|a\.k\.a|also\s+known\s+as|known\s+as|claims\s+to\s+be|pretends\s+to\s+be"
    r"|(?:my|his|her|their)\s+name\s+is)\b",
    re.IGNORECASE,
)
# The phrases that only ever speak of identity (not "is really", which is mostly an adverb).
_STRONG_IDENTITY = re.compile(
    r"\b(?:real\s+name|is\s+called|is\s+named|goes\s+by|same\s+person|alias|aka|a\.k\.a|also\s+known\s+as"
    r"|known\s+as|claims\s+to\s+be|pretends\s+to\s+be|(?:my|his|her|their)\s+name\s+is)\b",
    re.IGNORECASE,
)
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_ROLE_PLAY_PREFIX = re.compile(r"in\s+role[\s-]?play\b", re.IGNORECASE)

SCHEMA_TEXT = f"""\
Reply with ONLY one JSON object and nothing else - no prose before or after it:
{{"facts": [FACT, ...]}}
Give at most {MAX_FACTS} facts. When nothing is worth remembering, reply {{"facts": []}}.
Each FACT is an object with exactly these fields, no others:
  "content": one self-contained sentence on a single line, 1-{MAX_CONTENT_CHARS} characters. Use full names and \
absolute dates; no "he", "she", "it", "I" or "you".
  "type": "episodic" (something that happened) | "semantic" (a durable fact or preference) | "procedural" (a how-to). \
Anything phrased as a rule is semantic, never episodic.
  "kind": "fact" (the speaker states something about themself, or an event that happened) | "claim" (one person \
asserting something about another person) | "bit" (role-play, a running joke, in-character narration).
  "importance": a whole number from 1 to 10.
  "confidence": a number from 0 to 1.
  "subjects": the keys of the participants the fact is about: 0-{MAX_SUBJECTS} keys, no repeats, only keys of this \
conversation's participants (like "discord:1234"). Never invent a key; someone who is not a participant is named \
in the content, not listed here.
  "speaker": the key of the participant who said it. The speaker must be the author of one of the cited turns.
  "source_turn_ids": the ids of the turns the fact comes from, at least one: [12, 13] for [T12] and [T13].
  "valid_from", "valid_to" (optional): null, an absolute date like "2024-03-01", or a date and time with a time \
zone like "2024-03-01T18:30:00+00:00". Never relative words ("yesterday", "last June"). valid_to must be later than \
valid_from; for a one-day event give valid_from only.
Rules:
- Identity is the participant key, never a name. Never record that one participant is another person, or a name \
someone takes on in play.
- What one person says about another is a claim, not a fact: "Alice says: Bob loves jazz."
- Role-play, running jokes and in-character narration are bits, never real events.
- What someone says about the familiar is a claim too.
- World trivia a speaker mentions is not a fact about the speaker."""


class ExtractionError(Exception):
    """The answer is garbage; the message says precisely what is wrong (and can be shown to the model on retry)."""


@dataclass(frozen=True, slots=True)
class BatchTurn:
    id: int
    author_key: str
    author_name: str
    content: str
    mode: str
    created_at: datetime

    @classmethod
    def from_turn(cls, turn: Turn) -> BatchTurn:
        return cls(turn.id, turn.author_key, turn.author_name, turn.content, turn.mode, turn.created_at)


@dataclass(frozen=True, slots=True)
class Batch:
    place: str
    turns: tuple[BatchTurn, ...]
    self_key: str = SELF_KEY
    self_name: str = "Familiar"

    @property
    def participants(self) -> dict[str, str]:
        """{author_key: author_name} of every turn (the latest name wins), plus the familiar itself."""
        found = {turn.author_key: turn.author_name for turn in self.turns}
        found[self.self_key] = self.self_name
        return found


@dataclass(frozen=True, slots=True)
class Candidate:
    content: str
    type: str
    importance: int
    confidence: float
    subjects: tuple[str, ...]
    speaker: str
    source_turn_ids: tuple[int, ...]
    kind: str
    valid_from: datetime | None
    valid_to: datetime | None


@dataclass(frozen=True, slots=True)
class Dropped:
    """A well-formed fact the policy refused (not garbage); `index` is its position in the answer's facts."""

    index: int
    reason: str


@dataclass(frozen=True, slots=True)
class Extraction:
    candidates: tuple[Candidate, ...]
    dropped: tuple[Dropped, ...]


def prompt_turns(batch: Batch) -> tuple[BatchTurn, ...]:
    """The turns the model may see. Activity-return turns are skipped wholesale, keyed on the mode column: their
    text is self-generated fiction and the activity is already recorded as a mechanical event-fact."""
    return tuple(turn for turn in batch.turns if turn.mode != ACTIVITY_RETURN_MODE)


def render_batch(batch: Batch) -> str:
    """The prompt turns as "[T<id>] <author_name> (<author_key>): <content>" lines.

    A multi-line message keeps its line breaks, but its continuation lines are indented, so no message can
    forge a turn line of its own.
    """
    lines: list[str] = []
    for turn in prompt_turns(batch):
        name = " ".join(turn.author_name.split())
        body = "\n    ".join(line.strip() for line in turn.content.strip().splitlines())
        lines.append(f"[T{turn.id}] {name} ({turn.author_key}): {body}".rstrip())
    return "\n".join(lines)


def render_participants(batch: Batch) -> str:
    """The participants the model may name as subjects or speaker, one "<key> = <name>" line each."""
    return "\n".join(f"{key} = {' '.join(name.split())}" for key, name in batch.participants.items())


def to_new_fact(
    candidate: Candidate, place: str, *, origin: str = "extraction", channel_scoped: bool = False
) -> NewFact:
    """The store's insert record for a surviving candidate. Scope comes from where it was said
    (`place`), set by code, never by the model."""
    return NewFact(
        content=candidate.content,
        type=candidate.type,
        importance=candidate.importance,
        confidence=candidate.confidence,
        subjects=candidate.subjects,
        place=place,
        speaker=candidate.speaker,
        source_turn_ids=candidate.source_turn_ids,
        valid_from=candidate.valid_from,
        valid_to=candidate.valid_to,
        origin=origin,
        channel_scoped=channel_scoped,
    )


# -- decoding --------------------------------------------------------------------------------------------------
def _show(value: object) -> str:
    """A short, one-line, encodable rendering of a model-supplied value for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # pragma: no cover - decoded JSON always dumps
        text = repr(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate shows as \ud800
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_depth(text: str) -> None:
    """Nesting abuse is refused before the decoder sees it (brackets inside strings do not count)."""
    depth = 0
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ExtractionError(f"nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)")
        elif char in "]}":
            depth -= 1


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ExtractionError(f"duplicate field {_show(key)} in one object")
        seen[key] = value
    return seen


def _constant(name: str) -> NoReturn:
    raise ExtractionError(f"not JSON: {name} is not a JSON number")


def _decode(raw: str) -> object:
    """The answer's JSON value: the whole text (whitespace aside), or the whole body of one code fence."""
    if len(raw) > MAX_ANSWER_BYTES or len(raw.encode("utf-8", "surrogatepass")) > MAX_ANSWER_BYTES:
        raise ExtractionError(f"the answer is over {MAX_ANSWER_BYTES // 1024} KB")
    text = raw.strip()
    if not text:
        raise ExtractionError("the answer is empty")
    if text.startswith("```"):
        fence = _FENCE.fullmatch(text)
        if fence is None:
            raise ExtractionError("a code fence must hold the JSON object and nothing else (```json ... ```)")
        text = fence.group("body").strip()
    _check_depth(text)
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer with thousands of digits
        raise ExtractionError(f"not JSON: {exc}") from None


def _moment(where: str, value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ExtractionError(f"{where}: must be null or an ISO-8601 date string, not {_type_name(value)}")
    text = value.strip()
    try:
        if _DATE.fullmatch(text):
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        if _DATETIME.fullmatch(text):
            return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ExtractionError(f"{where}: {_show(value)} is not a real date") from None
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+", text, re.ASCII):
        raise ExtractionError(f"{where}: {_show(value)} has no time zone (add an offset like +00:00)")
    raise ExtractionError(
        f"{where}: {_show(value)} is not an absolute ISO-8601 date (like 2024-03-01 or 2024-03-01T18:30:00+00:00)"
    )


@dataclass(frozen=True, slots=True)
class _Raw:
    """One fact as decoded and checked, before the policy."""

    content: str
    type: str
    kind: str
    importance: int
    confidence: float
    subjects: tuple[str, ...]
    speaker: str
    source_turn_ids: tuple[int, ...]
    valid_from: datetime | None
    valid_to: datetime | None


def _content(where: str, value: object) -> str:
    if not isinstance(value, str):
        raise ExtractionError(f"{where}: must be a string, not {_type_name(value)}")
    text = value.strip()
    if not text:
        raise ExtractionError(f"{where}: is empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise ExtractionError(f"{where}: is {len(text)} characters long (at most {MAX_CONTENT_CHARS})")
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            raise ExtractionError(f"{where}: contains an unpaired surrogate")
        if char in _LINE_BREAKS:
            raise ExtractionError(f"{where}: must be one line (it contains the line break U+{ord(char):04X})")
        if category == "Cc" and char != "\t":
            raise ExtractionError(f"{where}: contains the control character U+{ord(char):04X}")
    return " ".join(text.split())


def _fact(index: int, value: object, shown: Mapping[int, BatchTurn], participants: Mapping[str, str]) -> _Raw:
    """Decode facts[index]; anything wrong raises ExtractionError naming the field."""
    at = f"facts[{index}]"
    if not isinstance(value, dict):
        raise ExtractionError(f"{at}: must be an object, not {_type_name(value)}")
    for name in value:
        if name not in _REQUIRED and name not in _OPTIONAL:
            raise ExtractionError(f"{at}: unknown field {_show(name)}")
    for name in _REQUIRED:
        if name not in value:
            raise ExtractionError(f"{at}: missing field '{name}'")

    content = _content(f"{at}.content", value["content"])
    fact_type = value["type"]
    if not isinstance(fact_type, str) or fact_type not in FACT_TYPES:
        raise ExtractionError(f"{at}.type: {_show(fact_type)} is not one of {', '.join(FACT_TYPES)}")
    kind = value["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        raise ExtractionError(f"{at}.kind: {_show(kind)} is not one of {', '.join(KINDS)}")

    importance = value["importance"]
    if isinstance(importance, bool) or not isinstance(importance, int):
        raise ExtractionError(f"{at}.importance: {_show(importance)} is not a whole number")
    if not 1 <= importance <= 10:
        raise ExtractionError(f"{at}.importance: {importance} is out of range (1-10)")
    confidence = value["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise ExtractionError(f"{at}.confidence: {_show(confidence)} is not a number")
    if not math.isfinite(confidence) or not 0 <= confidence <= 1:
        raise ExtractionError(f"{at}.confidence: {_show(confidence)} is out of range (0-1)")

    subjects = value["subjects"]
    if not isinstance(subjects, list):
        raise ExtractionError(f"{at}.subjects: must be an array of participant keys, not {_type_name(subjects)}")
    if len(subjects) > MAX_SUBJECTS:
        raise ExtractionError(f"{at}.subjects: {len(subjects)} subjects (at most {MAX_SUBJECTS})")
    for position, subject in enumerate(subjects):
        if not isinstance(subject, str):
            raise ExtractionError(f"{at}.subjects[{position}]: must be a string, not {_type_name(subject)}")
        if subject not in participants:
            raise ExtractionError(f"{at}.subjects[{position}]: {_show(subject)} is not a participant of this batch")
        if subject in subjects[:position]:
            raise ExtractionError(f"{at}.subjects[{position}]: {_show(subject)} is listed twice")

    sources = value["source_turn_ids"]
    if not isinstance(sources, list) or not sources:
        raise ExtractionError(f"{at}.source_turn_ids: must be a non-empty array of turn ids")
    for position, turn_id in enumerate(sources):
        if isinstance(turn_id, bool) or not isinstance(turn_id, int):
            raise ExtractionError(f"{at}.source_turn_ids[{position}]: {_show(turn_id)} is not a turn id")
        if turn_id not in shown:
            raise ExtractionError(f"{at}.source_turn_ids[{position}]: {turn_id} is not one of the turns shown")

    speaker = value["speaker"]
    if not isinstance(speaker, str):
        raise ExtractionError(f"{at}.speaker: must be a participant key, not {_type_name(speaker)}")
    if speaker not in participants:
        raise ExtractionError(f"{at}.speaker: {_show(speaker)} is not a participant of this batch")
    if all(shown[turn_id].author_key != speaker for turn_id in sources):
        raise ExtractionError(f"{at}.speaker: {_show(speaker)} wrote none of the cited turns")

    valid_from = _moment(f"{at}.valid_from", value.get("valid_from"))
    valid_to = _moment(f"{at}.valid_to", value.get("valid_to"))
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise ExtractionError(f"{at}.valid_to: must be after valid_from")

    return _Raw(
        content=content,
        type=fact_type,
        kind=kind,
        importance=importance,
        confidence=float(confidence),
        subjects=tuple(subjects),
        speaker=speaker,
        source_turn_ids=tuple(sorted(set(sources))),
        valid_from=valid_from,
        valid_to=valid_to,
    )


# -- policy ----------------------------------------------------------------------------------------------------
_BEFORE_NAME_IS = re.compile(
    r"\b(?:is|am|are|was|were|be)\s+(?:(?:actually|really|secretly|also|just|truly|now)\s+)?$", re.IGNORECASE
)
_AFTER_NAME_SAYS = re.compile(r"\s+(?:says|said|claims|claimed)\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s\b")


def _folded_name(name: str) -> str | None:
    folded = " ".join(name.split()).lower()
    if len(folded) < 2:  # a one-letter name ("a", "I") would match everywhere
        return None
    return folded


def _word_char(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def _occurrences(text: str, name: str) -> list[tuple[int, int]]:
    """Where `name` stands in `text` as whole words (both already lower-cased, whitespace folded)."""
    found: list[tuple[int, int]] = []
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if not _word_char(text, start - 1) and not _word_char(text, end):
            found.append((start, end))
        start = text.find(name, start + 1)
    return found


class _People:
    """The batch's participants by name, for the identity rules.

    Names are found by plain search with word-boundary checks rather than a regex per person: the
    people change from batch to batch, and compiling their patterns cost more than the rest of a
    memory tick.
    """

    def __init__(self, batch: Batch) -> None:
        self.names: dict[str, str] = batch.participants
        every: dict[str, set[str]] = {}
        for turn in batch.turns:
            every.setdefault(turn.author_key, set()).add(turn.author_name)
        every.setdefault(batch.self_key, set()).add(batch.self_name)
        self._names: dict[str, tuple[str, ...]] = {}
        for key, names in every.items():
            folded = tuple(sorted({f for f in (_folded_name(n) for n in names) if f}))
            if folded:
                self._names[key] = folded

    @staticmethod
    def _text(content: str) -> str:
        return " ".join(content.split()).lower()

    def _spans(self, text: str, key: str) -> list[tuple[int, int]]:
        return [span for name in self._names.get(key, ()) for span in _occurrences(text, name)]

    def mentioned(self, content: str) -> set[str]:
        text = self._text(content)
        return {key for key in self._names if self._spans(text, key)}

    def _is_named(self, text: str, key: str) -> bool:
        """ "is <name>", "I am really <name>" - but not "is <name>'s brother"."""
        return any(
            _BEFORE_NAME_IS.search(text, max(0, start - 40), start) and not _POSSESSIVE.match(text, end)
            for start, end in self._spans(text, key)
        )

    def identity_language(self, content: str) -> bool:
        """Identity phrases ("I am", "is actually", "real name", "goes by", ...) or "is <a participant's name>"."""
        if _IDENTITY.search(content):
            return True
        text = self._text(content)
        return any(self._is_named(text, key) for key in self._names)

    def equates(self, content: str) -> bool:
        """Two participants named, and tied by a phrase that only speaks of identity or by "is <name>"."""
        mentioned = self.mentioned(content)
        if len(mentioned) < 2:
            return False
        text = self._text(content)
        return bool(_STRONG_IDENTITY.search(content)) or any(self._is_named(text, key) for key in mentioned)

    def attributed(self, content: str, speaker: str) -> bool:
        """The content starts "<speaker's name> says/said/claims/claimed"."""
        text = self._text(content)
        return any(
            start == 0 and _AFTER_NAME_SAYS.match(text, end) is not None for start, end in self._spans(text, speaker)
        )


def _refusal(raw: _Raw, people: _People, *, identity: bool) -> str | None:
    """Why the policy refuses a well-formed fact, or None. Identity never comes from play or from names:

    - a bit that uses identity language is dropped (a name taken in play is not an identity);
    - a fact that says a participant is another participant is dropped (it would merge two people): its content
      uses identity language and names a participant who is not among its subjects ("Bob is Alice" about Bob), or
      it names two participants and ties them by name ("Bob is Alice", "Bob and Alice are the same person").
    Names are matched as whole words, ignoring case; the heuristic errs toward dropping.
    """
    if raw.kind == "bit" and identity:
        return "identity never comes from play: a bit that uses identity language"
    if identity and (people.mentioned(raw.content) - set(raw.subjects) or people.equates(raw.content)):
        return "would merge two people: identity language naming another participant"
    return None


def _apply_policy(raw: _Raw, people: _People, *, identity: bool) -> Candidate:
    """Claim discipline and bits, on a fact the identity rules let through.

    - Claims: when the speaker is not among the subjects but another participant is (the familiar included), the
      fact is a claim whatever kind the model gave. A claim's content is stored attributed ("<Speaker> says:
      <content>" unless it already starts "<Speaker> says/claims") and its confidence is capped at 0.7, below
      auto-promotion.
    - Bits are stored as bits: "In role-play: " in front, type episodic, confidence capped at 0.5, so the owner
      sees them. A bit about someone else is attributed as well and stays a bit (the stricter of the two).
    - Names are not identities: any other fact that uses identity language ("Bob's real name is Cor") has its
      confidence capped at 0.7 too, so the owner confirms it.
    """
    kind = raw.kind
    content = raw.content
    confidence = raw.confidence
    fact_type = raw.type
    about_another = raw.speaker not in raw.subjects and bool(raw.subjects)
    if about_another and kind == "fact":
        kind = "claim"
    if kind == "claim" or (kind == "bit" and about_another):
        if not people.attributed(content, raw.speaker):
            content = f"{people.names[raw.speaker]} says: {content}"
        confidence = min(confidence, CLAIM_CONFIDENCE_CAP)
    if identity:
        confidence = min(confidence, CLAIM_CONFIDENCE_CAP)
    if kind == "bit":
        if not _ROLE_PLAY_PREFIX.match(content):
            content = BIT_PREFIX + content
        fact_type = "episodic"
        confidence = min(confidence, BIT_CONFIDENCE_CAP)
    return Candidate(
        content=" ".join(content.split()),
        type=fact_type,
        importance=raw.importance,
        confidence=confidence,
        subjects=raw.subjects,
        speaker=raw.speaker,
        source_turn_ids=raw.source_turn_ids,
        kind=kind,
        valid_from=raw.valid_from,
        valid_to=raw.valid_to,
    )


def parse_extraction(raw: str, batch: Batch) -> Extraction:
    """Decode and filter one answer. Raises ExtractionError when any part of it is garbage.

    Garbage (the whole answer, never a partial batch): over 64 KB, nested too deeply, not exactly one JSON object
    (a code fence around it is allowed, prose is not), fields other than "facts", more than MAX_FACTS facts, and
    any fact that breaks the contract in SCHEMA_TEXT: unknown or missing field, bad enum, out-of-range number, a
    bool or float where an int belongs, a relative or zone-less date, a source turn the model was not shown (an
    activity return included), a speaker who wrote none of the cited turns, a subject who is not a participant.
    """
    value = _decode(raw)
    if not isinstance(value, dict):
        raise ExtractionError(f'the answer must be one JSON object {{"facts": [...]}}, not {_type_name(value)}')
    for name in value:
        if name != "facts":
            raise ExtractionError(f'unknown field {_show(name)} (the object holds only "facts")')
    if "facts" not in value:
        raise ExtractionError("missing field 'facts'")
    facts = value["facts"]
    if not isinstance(facts, list):
        raise ExtractionError(f"facts: must be an array, not {_type_name(facts)}")
    if len(facts) > MAX_FACTS:
        raise ExtractionError(f"facts: {len(facts)} facts (at most {MAX_FACTS})")

    shown = {turn.id: turn for turn in prompt_turns(batch)}
    participants = batch.participants
    decoded = [_fact(index, fact, shown, participants) for index, fact in enumerate(facts)]

    people = _People(batch)
    candidates: list[Candidate] = []
    dropped: list[Dropped] = []
    for index, fact in enumerate(decoded):
        identity = people.identity_language(fact.content)
        reason = _refusal(fact, people, identity=identity)
        if reason is None:
            candidates.append(_apply_policy(fact, people, identity=identity))
        else:
            dropped.append(Dropped(index, reason))
    return Extraction(tuple(candidates), tuple(dropped))
