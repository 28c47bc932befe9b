"""Character cards (Character Card V2 / V3, as used by SillyTavern): a card becomes a familiar, and a
familiar becomes a card.

A card is JSON (`{"spec": "chara_card_v2" | "chara_card_v3", "spec_version", "data": {...}}`), either as a
file or inside a PNG image's text chunks: `chara` holds base64 of the V2 JSON, `ccv3` base64 of the V3 JSON
(when both are there, ccv3 is read, as SillyTavern does).

Import (create_familiar_from_card) makes a new familiar:
- character.md: the card's name as the title, then one Markdown section per field the persona is made of
  (Description, Personality, Scenario, Example dialogue, System prompt, Post-history instructions; empty
  ones left out). A line inside a field that reads like one of those headings is written with a leading
  backslash (and read back without it), so the sections always split where they were written.
- character.toml: the template's, with `familiar.display_name` = the card's name and `familiar.greeting` =
  its first message.
- lorebook.toml: the card's character_book, converted by app.lore.formats (the same mapping `familiar lore
  import` uses; the fields it does not use are kept under each entry's `extensions`).
- card.json: the card as read, so nothing the familiar does not use is lost (alternate greetings, creator
  notes, tags, assets, extensions...), and avatar.png: a PNG card's image without its card chunks.
The familiar's folder is built under a temporary name and renamed into place when complete: a bad card,
or any failure, leaves nothing behind. An existing familiar is never overwritten.

Export (write_card) writes a V3 card built from card.json (when the familiar came from a card) with the
familiar's current files laid over it: the name from display_name, the first message from the greeting,
the persona fields from character.md's sections and the character_book from lorebook.toml. A field whose
text is unchanged (ignoring surrounding whitespace and line-ending style) keeps the card's original text
exactly, so an unedited familiar exports the card it came from. A PNG export carries both chunks: `chara`
(V2: the card as read when it was V2, else the V3 card with the V2 spec, as SillyTavern writes it) and
`ccv3`, in the card's own image when it had one, else a generated placeholder.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import logging
import os
import re
import tempfile
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from app.config.editing import set_values
from app.config.errors import ConfigError
from app.config.files import UnreadableFileError, read_limited
from app.config.paths import FamiliarPaths, create_familiar, familiar_exists, template_dir
from app.config.settings import load_settings, parse_settings
from app.lore.book import LorebookError, parse_lorebook, read_lorebook_text
from app.lore.document import NEW_FILE_HEADER, LorebookDocument
from app.lore.formats import LorebookFormatError, export_lorebook, import_lorebook
from app.runtime.api.setup_views import CardApplied, CardPreview
from app.runtime.errors import CardError, CardNameError
from app.runtime.png_text import SIGNATURE, TEXT_CHUNKS, Chunk, PngError, placeholder, read_chunks, text_of, with_text

_log = logging.getLogger(__name__)

CARD_FILE = "card.json"
IMAGE_FILE = "avatar.png"
MAX_CARD_BYTES = 64 * 1024 * 1024
SPECS = {"chara_card_v2": 2, "chara_card_v3": 3}
CARD_CHUNKS = ("chara", "ccv3")
# The card's text fields (each a string when present).
TEXT_FIELDS = (
    "name", "description", "personality", "scenario", "first_mes", "mes_example", "creator_notes",
    "system_prompt", "post_history_instructions", "creator", "character_version",
)  # fmt: skip
# character.md's sections: (card field, heading), in the order they are written.
SECTIONS = (
    ("description", "Description"),
    ("personality", "Personality"),
    ("scenario", "Scenario"),
    ("mes_example", "Example dialogue"),
    ("system_prompt", "System prompt"),
    ("post_history_instructions", "Post-history instructions"),
)
# Every field a V2 card's data has (spec_v2.md), with the value written when a familiar lacks one.
V2_FIELDS: dict[str, Any] = {
    "name": "",
    "description": "",
    "personality": "",
    "scenario": "",
    "first_mes": "",
    "mes_example": "",
    "creator_notes": "",
    "system_prompt": "",
    "post_history_instructions": "",
    "alternate_greetings": [],
    "tags": [],
    "creator": "",
    "character_version": "",
    "extensions": {},
}
V3_FIELDS: dict[str, Any] = {**V2_FIELDS, "group_only_greetings": []}  # the one new field V3 requires
# Fields SillyTavern also writes at a card's top level (the V1 layout); kept in step with `data` on export.
V1_MIRRORS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")

_HEADING = re.compile(
    r"(\\*)## (" + "|".join(re.escape(heading) for _key, heading in SECTIONS) + r")[ \t]*", re.IGNORECASE
)
_SECTION_OF = {heading.lower(): key for key, heading in SECTIONS}
_SURROGATE = re.compile("[\ud800-\udfff]")
_IMAGES = {b"\xff\xd8\xff": "JPEG", b"GIF8": "GIF", b"BM": "BMP"}


@dataclass(frozen=True, slots=True)
class Card:
    document: dict[str, Any]  # the card's JSON, as read
    version: int  # 2 or 3
    source: str  # what the file was, in words
    image: tuple[Chunk, ...] | None  # a PNG card's image, without its card chunks

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = self.document["data"]
        return data

    @property
    def name(self) -> str:
        return str(self.data["name"]).strip()


@dataclass(frozen=True, slots=True)
class CardImport:
    name: str  # the new familiar's name (its folder)
    folder: Path
    source: str  # what the card was, in words
    display_name: str
    entries: int  # lorebook entries imported
    has_greeting: bool
    has_image: bool


@dataclass(frozen=True, slots=True)
class CardExport:
    file: Path
    format: str  # png | json
    entries: int  # lorebook entries written
    image: str  # png: "the card's own image" or "a placeholder image"; json: ""
    card: dict[str, Any]  # the V3 card written


# -- reading a card ------------------------------------------------------------------------------------
def read_card(path: Path) -> Card:
    """Read a card file (PNG or JSON). Raises CardError naming the file and what is wrong."""
    try:
        raw = read_limited(path, MAX_CARD_BYTES, "a character card")
    except UnreadableFileError as exc:
        raise CardError(str(exc)) from None
    try:
        return parse_card(raw, png_expected=path.suffix.lower() == ".png")
    except CardError as exc:
        raise CardError(f"{path}: {exc}") from None


def parse_card(raw: bytes, *, png_expected: bool = False) -> Card:
    """A card from a file's bytes: a PNG with a `ccv3` or `chara` text chunk, or JSON text."""
    if raw.startswith(SIGNATURE):
        return _from_png(raw)
    if png_expected:
        raise CardError("not a PNG (it does not start with the PNG signature)")
    kind = next((kind for magic, kind in _IMAGES.items() if raw.startswith(magic)), None)
    if raw.startswith(b"RIFF") and raw[8:12] == b"WEBP":
        kind = "WebP"
    if kind is not None:
        raise CardError(f"a {kind} image, not a card: cards are PNG images or JSON files")
    if raw.startswith(b"PK\x03\x04"):
        raise CardError("a zip file (perhaps a CHARX card): export the card as PNG or JSON instead")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CardError("neither a PNG image nor JSON text") from None
    document = _json(text, "the file")
    version = check_card(document)
    return Card(document, version, f"a Character Card V{version} (JSON)", None)


def _from_png(raw: bytes) -> Card:
    try:
        chunks = read_chunks(raw)
    except PngError as exc:
        raise CardError(str(exc)) from None
    found: dict[str, Chunk] = {}
    for chunk in chunks:
        if chunk.kind in TEXT_CHUNKS:
            keyword = chunk.data.partition(b"\0")[0].decode("latin-1").lower()
            if keyword in CARD_CHUNKS:
                found.setdefault(keyword, chunk)
    if not found:
        raise CardError("a PNG without a character card in it (no 'chara' or 'ccv3' text chunk)")
    keyword = "ccv3" if "ccv3" in found else "chara"
    try:
        _name, text = text_of(found[keyword])
    except PngError as exc:
        raise CardError(str(exc)) from None
    payload = "".join(text.split())
    if not payload:
        raise CardError(f"the '{keyword}' chunk is empty")
    try:
        decoded = base64.b64decode(payload + "=" * (-len(payload) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise CardError(f"the '{keyword}' chunk is not valid base64") from None
    try:
        card_text = decoded.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CardError(f"the '{keyword}' chunk does not decode to UTF-8 text") from None
    document = _json(card_text, f"the '{keyword}' chunk")
    version = check_card(document)
    image = tuple(
        c
        for c in chunks
        if not (c.kind in TEXT_CHUNKS and c.data.partition(b"\0")[0].decode("latin-1").lower() in CARD_CHUNKS)
    )
    return Card(document, version, f"a Character Card V{version} (PNG, '{keyword}' chunk)", image)


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CardError(f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise CardError(f"{what} is not readable JSON: values are nested too deeply") from None


def check_card(document: Any) -> int:
    """The card's major version (2 or 3); raises CardError if it is not a V2 / V3 character card."""
    if not isinstance(document, dict):
        raise CardError(f"expected a JSON object (a character card), found {_json_type(document)}")
    spec = document.get("spec")
    if spec is None:
        if isinstance(document.get("entries"), dict | list):
            raise CardError("a lorebook, not a character card (`familiar lore import` reads lorebooks)")
        if isinstance(document.get("name"), str) and ("first_mes" in document or "description" in document):
            raise CardError("a Character Card V1 (it has no 'spec'); only V2 and V3 cards are read")
        raise CardError("not a character card: it has no 'spec' (expected chara_card_v2 or chara_card_v3)")
    if spec == "lorebook_v3":
        raise CardError("a lorebook_v3 file, not a character card (`familiar lore import` reads lorebooks)")
    if spec not in SPECS:
        raise CardError(f"unknown spec {str(spec)[:40]!r} (expected chara_card_v2 or chara_card_v3)")
    version = SPECS[spec]
    spec_version = document.get("spec_version")
    if spec_version is not None and not _version_is(spec_version, version):
        raise CardError(f"spec_version {str(spec_version)[:20]!r} is not a version of {spec} ({version}.x)")
    data = document.get("data")
    if not isinstance(data, dict):
        raise CardError(f"a {spec} card needs a 'data' object, found {_json_type(data)}")
    for field in TEXT_FIELDS:
        value = data.get(field)
        if value is not None and not isinstance(value, str):
            raise CardError(f"data.{field} must be text, found {_json_type(value)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CardError("the card has no name (data.name is missing or blank)")
    book = data.get("character_book")
    if book is not None and not isinstance(book, dict):
        raise CardError(f"data.character_book must be an object, found {_json_type(book)}")
    return version


def _version_is(value: Any, major: int) -> bool:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    try:
        return int(float(value)) == major
    except (ValueError, OverflowError):
        return False


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


# -- the persona as Markdown ---------------------------------------------------------------------------
def render_persona(name: str, fields: Mapping[str, Any]) -> str:
    """character.md for a card: the name as the title, then a section per non-empty persona field."""
    parts = [f"# {' '.join(_clean(name).split())}"]
    for key, heading in SECTIONS:
        value = fields.get(key)
        text = normalise(value) if isinstance(value, str) else ""
        if text:
            parts.append(f"## {heading}\n\n{_escape(text)}")
    return "\n\n".join(parts) + "\n"


def parse_persona(text: str) -> dict[str, str]:
    """The persona fields of character.md (the inverse of render_persona, up to surrounding whitespace).

    Text before the first section (other than the title line) belongs to the description, so a familiar
    whose character.md has no sections exports it whole as its description.
    """
    buckets: dict[str | None, list[str]] = {None: []}
    current: str | None = None
    titled = False
    for line in normalise_newlines(text).split("\n"):
        heading = _HEADING.fullmatch(line)
        if heading and not heading.group(1):
            current = _SECTION_OF[heading.group(2).lower()]
            buckets.setdefault(current, [])
            continue
        if heading:
            line = line[1:]  # one backslash of escaping off
        if current is None and not titled and line.strip():
            titled = True
            if line.startswith("# "):
                continue
        buckets[current].append(line)
    fields = {key: "\n".join(buckets.get(key, [])).strip() for key, _heading in SECTIONS}
    preamble = "\n".join(buckets[None]).strip()
    if preamble:
        fields["description"] = f"{preamble}\n\n{fields['description']}".strip()
    return fields


def _escape(text: str) -> str:
    return "\n".join("\\" + line if _HEADING.fullmatch(line) else line for line in text.split("\n"))


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def normalise(text: str) -> str:
    """A field's text as compared on export: one line-ending style, no surrounding whitespace."""
    return _clean(normalise_newlines(text)).strip()


def _clean(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)  # lone surrogates (legal in JSON) cannot be written as UTF-8


# -- importing -----------------------------------------------------------------------------------------
def familiar_name_for(card_name: str) -> str:
    """A folder-safe familiar name from a card's name ("Captain Rook!" -> "Captain-Rook"); "" if none."""
    ascii_only = unicodedata.normalize("NFKD", card_name).encode("ascii", "ignore").decode("ascii")
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", ascii_only)
    name = re.sub(r"-{2,}", "-", name).strip("-_")
    return name[:64].rstrip("-_")


def create_familiar_from_card(path: Path, root: Path, name: str | None = None) -> CardImport:
    """Create a new familiar under `root` from the card file at `path` (PNG or JSON, V2 or V3).

    `name` defaults to a folder-safe form of the card's name. Raises CardError for a bad card, ConfigError
    for a bad or taken name (FamiliarExistsError: never overwritten) and OSError if the data folder cannot be
    written; in every case nothing is left behind. Blocking file I/O: the window calls it from an executor.
    """
    card = read_card(path)
    if name is None:
        name = familiar_name_for(card.name)
        if not name:
            raise CardNameError(
                f"{path}: the card's name {card.name!r} has no letters a folder name can use; choose a name"
            )
    paths = FamiliarPaths(root=root, name=name)
    try:
        files, lore = _familiar_files(card, paths)
    except CardError as exc:
        raise CardError(f"{path}: {exc}") from None

    def fill(folder: Path) -> None:
        for filename, content in files.items():  # over the template's copies (its lore is Wisp's)
            folder.joinpath(filename).write_bytes(content)

    create_familiar(paths, fill)
    _log.info("familiar %s created from a card (%d lore entries)", name, lore)
    return CardImport(
        name=name,
        folder=paths.folder,
        source=card.source,
        display_name=card.name,
        entries=lore,
        has_greeting=bool(_text(card.data, "first_mes").strip()),
        has_image=card.image is not None,
    )


def _familiar_files(card: Card, paths: FamiliarPaths) -> tuple[dict[str, bytes], int]:
    """The files a card becomes and its lore entry count, checked as they will be read (errors name the
    final paths)."""
    data = card.data
    files: dict[str, bytes] = {
        "character.md": render_persona(card.name, data).encode("utf-8"),
        "character.toml": _character_toml(card.name, _text(data, "first_mes"), paths.character_toml).encode("utf-8"),
    }
    document = LorebookDocument.parse(NEW_FILE_HEADER, paths.lorebook_toml)
    entries = 0
    if data.get("character_book") is not None:
        try:
            imported = import_lorebook(card.document)
        except LorebookFormatError as exc:
            raise CardError(f"its character_book: {exc}") from None
        try:
            document.set_fields({key: value for key, value in imported.book.items() if key != "extensions"})
            for space, value in imported.book.get("extensions", {}).items():
                document.set_extension(space, value)
            document.add_entries(imported.entries)
            document.book()
        except LorebookError as exc:
            where = f"{exc.key}: " if exc.key else ""
            raise CardError(f"its character_book cannot become a lorebook: {where}{exc.problem}") from None
        entries = len(imported.entries)
    files["lorebook.toml"] = document.text().encode("utf-8")
    files[CARD_FILE] = _json_bytes(card.document, indent=4)
    if card.image is not None:
        files[IMAGE_FILE] = with_text(list(card.image), [])
    return files, entries


def _text(data: Mapping[str, Any], field: str) -> str:
    value = data.get(field)
    return value if isinstance(value, str) else ""


def _character_toml(display_name: str, greeting: str, path: Path) -> str:
    """The template's character.toml with the card's name and first message."""
    document = tomlkit.parse((template_dir() / "character.toml").read_text(encoding="utf-8"))
    table = document["familiar"]
    assert isinstance(table, Table)
    values = {"display_name": _clean(display_name), "greeting": _clean(greeting)}
    for key, value in values.items():
        if value or key == "display_name":
            table[key] = tomlkit.string(value, multiline="\n" in value and "\r" not in value)
    text = tomlkit.dumps(document)
    familiar = parse_settings(text, path).familiar
    if (familiar.display_name, familiar.greeting) != (values["display_name"], values["greeting"]):
        for key, value in values.items():  # tomlkit mangled a multi-line string: write single-line ones
            if value or key == "display_name":
                table[key] = tomlkit.string(value)
        text = tomlkit.dumps(document)
        parse_settings(text, path)
    return text


def _json_bytes(document: Any, *, indent: int | None = None) -> bytes:
    separators = None if indent else (",", ":")
    try:
        text = json.dumps(document, ensure_ascii=False, indent=indent, separators=separators)
        return (text + ("\n" if indent else "")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: \u-escaped, the JSON still says the same
        text = json.dumps(document, ensure_ascii=True, indent=indent, separators=separators)
        return (text + ("\n" if indent else "")).encode("ascii")


# -- exporting -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Current:
    """A familiar's card-relevant state, read from its files."""

    fields: dict[str, str]  # card field -> text (name, first_mes and the persona sections)
    lore: dict[str, Any]  # lorebook.toml as parsed
    entries: int
    original: dict[str, Any] | None  # card.json, when the familiar came from a card
    image: tuple[Chunk, ...] | None


def familiar_card(paths: FamiliarPaths, version: int = 3) -> dict[str, Any]:
    """The familiar as a card of `version` (3, or 2 for a PNG's `chara` chunk). Raises CardError or
    ConfigError (character.toml, character.md, lorebook.toml, naming the file)."""
    return _card_of(_read_current(paths), version)


def write_card(paths: FamiliarPaths, target: Path) -> CardExport:
    """Write the familiar as a V3 card to `target`: a PNG with `chara` and `ccv3` chunks when the name ends
    in .png, else JSON. Atomic; on any error nothing is written."""
    if not familiar_exists(paths):
        raise CardError(f"there is no familiar '{paths.name}' to export")
    current = _read_current(paths)
    card = _card_of(current, 3)
    if target.suffix.lower() == ".png":
        fmt = "png"
        image = list(current.image) if current.image is not None else placeholder(current.fields["name"])
        described = "the card's own image" if current.image is not None else "a placeholder image"
        came_as_v2 = current.original is not None and current.original.get("spec") == "chara_card_v2"
        # SillyTavern writes the same card in both chunks, the spec aside; a V2 card gives back its own form.
        v2 = _card_of(current, 2) if came_as_v2 else {**card, "spec": "chara_card_v2", "spec_version": "2.0"}
        texts = [
            ("chara", base64.b64encode(_json_bytes(v2)).decode("ascii")),
            ("ccv3", base64.b64encode(_json_bytes(card)).decode("ascii")),
        ]
        payload = with_text(image, texts, drop=CARD_CHUNKS)
    else:
        fmt, described = "json", ""
        payload = _json_bytes(card, indent=4)
    _write_atomically(target, payload)
    return CardExport(file=target, format=fmt, entries=current.entries, image=described, card=card)


def _read_current(paths: FamiliarPaths) -> _Current:
    settings = load_settings(paths.character_toml)
    try:
        persona = paths.character_md.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        persona = ""
    except UnicodeDecodeError:
        raise ConfigError(paths.character_md, None, None, "not valid UTF-8") from None
    except OSError as exc:
        raise ConfigError(paths.character_md, None, None, f"cannot be read: {exc.strerror or exc}") from None
    text = read_lorebook_text(paths.lorebook_toml)
    book = parse_lorebook(text, paths.lorebook_toml)
    fields = {
        "name": settings.familiar.display_name,
        "first_mes": settings.familiar.greeting,
        **parse_persona(persona),
    }
    original = _kept(paths.folder / CARD_FILE)
    image = _kept_image(paths.folder / IMAGE_FILE)
    return _Current(fields, tomllib.loads(text), len(book.entries), original, image)


def _kept(path: Path) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CardError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        card = parse_card(raw)
    except CardError as exc:
        raise CardError(f"{path} (the card this familiar came from) is damaged: {exc}") from None
    return card.document


def _kept_image(path: Path) -> tuple[Chunk, ...] | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CardError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        return tuple(read_chunks(raw))
    except PngError as exc:
        raise CardError(f"{path}: {exc}") from None


def _card_of(current: _Current, version: int) -> dict[str, Any]:
    """The card of `version`: the original (if any) with the familiar's current state laid over it."""
    original = current.original
    card = _copy_without_book(original) if original is not None else {}
    spec = "chara_card_v3" if version == 3 else "chara_card_v2"
    if card.get("spec") != spec:
        card["spec"] = spec
        card["spec_version"] = "3.0" if version == 3 else "2.0"
    card.setdefault("spec_version", "3.0" if version == 3 else "2.0")
    data = card.setdefault("data", {})
    before = original["data"] if original is not None else {}
    for field, value in current.fields.items():
        old = before.get(field)
        if isinstance(old, str | None) and normalise(old or "") == normalise(value):
            continue  # unchanged: the card's own text, exactly
        data[field] = value
        if field in V1_MIRRORS and isinstance(card.get(field), str):
            card[field] = value
    for field, default in (V3_FIELDS if version == 3 else V2_FIELDS).items():
        data.setdefault(field, copy.deepcopy(default))
    if current.entries or before.get("character_book") is not None:
        try:
            exported = export_lorebook(current.lore, "ccv3" if version == 3 else "ccv2")
        except LorebookFormatError as exc:
            raise CardError(f"the lorebook cannot be written into the card: {exc}") from None
        data["character_book"] = exported["data"] if version == 3 else exported
    return card


def _copy_without_book(card: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a card but for its character_book (rebuilt from lorebook.toml, and slow to copy when
    big), whose key keeps its place with a None."""

    def data(value: dict[str, Any]) -> dict[str, Any]:
        return {key: None if key == "character_book" else copy.deepcopy(item) for key, item in value.items()}

    return {key: data(value) if key == "data" else copy.deepcopy(value) for key, value in card.items()}


def _write_atomically(target: Path, payload: bytes) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as tmp:
                tmp.write(payload)
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise CardError(f"{target}: cannot be written: {exc.strerror or exc}") from None


# -- the card's greetings ------------------------------------------------------------------------------
def alternate_greetings(folder: Path) -> list[str]:
    """The alternate greetings of the card the familiar in `folder` came from (card.json's
    `data.alternate_greetings`, the texts as the card has them, blank ones left out): [] when it came from
    none, or the card cannot be read (logged). The first greeting is character.toml's `familiar.greeting`.
    Blocking file I/O."""
    try:
        card = _kept(folder / CARD_FILE)
    except CardError as exc:
        _log.warning("alternate greetings not read: %s", exc)
        return []
    data = card.get("data") if card is not None else None
    found = data.get("alternate_greetings") if isinstance(data, dict) else None
    if not isinstance(found, list):
        return []
    return [_clean(text) for text in found if isinstance(text, str) and text.strip()]


# -- a card into the familiar that is open ---------------------------------------------------------------
def preview_card(path: Path) -> CardPreview:
    """What the card at `path` would bring, read but not applied. Raises CardError. Blocking."""
    card = read_card(path)
    data = card.data
    book = data.get("character_book")
    entries = book.get("entries") if isinstance(book, dict) else None
    description = " ".join(_clean(_text(data, "description")).split())
    return CardPreview(
        path=path,
        name=_clean(card.name),
        source=card.source,
        description=description if len(description) <= 240 else description[:239].rstrip() + "…",
        lore_entries=len(entries) if isinstance(entries, list) else 0,
        has_greeting=bool(_text(data, "first_mes").strip()),
        has_image=card.image is not None,
    )


def card_display_name(path: Path) -> str:
    """The display name a familiar made from the card at `path` was given. Raises CardError. Blocking."""
    return _clean(read_card(path).name)


def apply_card_to_familiar(path: Path, paths: FamiliarPaths) -> CardApplied:
    """Make the familiar at `paths` the card's character: its persona (character.md), name and greeting
    (character.toml, whose other settings stay as they are), lorebook, card.json and avatar.png.

    Everything is read and checked before anything is written. A replaced file that is neither the
    template's nor already the card's is first kept beside it as `<file>.before-card-<UTC time>`.
    Raises CardError (a bad card, a file that cannot be written) or ConfigError. Blocking file I/O.
    """
    card = read_card(path)
    try:
        files, lore = _familiar_files(card, paths)
    except CardError as exc:
        raise CardError(f"{path}: {exc}") from None
    del files["character.toml"]  # the template's: only the name and greeting change in the familiar's own
    values = {"familiar.display_name": _clean(card.name), "familiar.greeting": _clean(_text(card.data, "first_mes"))}
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    replaced: list[tuple[Path, bytes]] = []
    for filename in ("character.md", "lorebook.toml", CARD_FILE, IMAGE_FILE):
        current = paths.folder / filename
        try:
            old = current.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CardError(f"{current}: cannot be read: {exc.strerror or exc}") from None
        template = template_dir() / filename
        if old == files.get(filename) or (template.is_file() and template.read_bytes() == old):
            continue
        replaced.append((current.with_name(f"{filename}.before-card-{stamp}"), old))
    set_values(paths.character_toml, values)  # checked before it is written; a ConfigError changes nothing
    for backup, old in replaced:
        _write_atomically(backup, old)
    for filename, content in files.items():
        _write_atomically(paths.folder / filename, content)
    if IMAGE_FILE not in files:
        (paths.folder / IMAGE_FILE).unlink(missing_ok=True)  # the previous card's picture is not this one's
    _log.info("familiar %s became a card's character (%d lore entries)", paths.name, lore)
    return CardApplied(
        display_name=values["familiar.display_name"],
        source=card.source,
        lore_entries=lore,
        has_greeting=bool(values["familiar.greeting"].strip()),
        kept=tuple(backup for backup, _old in replaced),
    )


__all__ = [
    "CARD_FILE",
    "IMAGE_FILE",
    "SECTIONS",
    "Card",
    "CardError",
    "CardExport",
    "CardImport",
    "CardNameError",
    "alternate_greetings",
    "apply_card_to_familiar",
    "card_display_name",
    "check_card",
    "create_familiar_from_card",
    "familiar_card",
    "familiar_name_for",
    "normalise",
    "parse_card",
    "parse_persona",
    "preview_card",
    "read_card",
    "render_persona",
    "write_card",
]
