"""Character cards: a V2 / V3 card (JSON or PNG) becomes a familiar, and the familiar becomes a V3 card again.

Golden round trips: import, export, re-import and export again gives the same JSON. Against the original card,
an export gives back every field (unknown ones too) exactly, except the character_book, which goes through
lorebook.toml and may gain the format's defaults (the normalisations of tests/lore/test_formats.py): every field
the original book had comes back with the same value.

PNG files are written and read by Pillow in these tests, a reader and writer independent of ours.
"""

from __future__ import annotations

import base64
import io
import json
import tomllib
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, PngImagePlugin

from app.config.editing import set_values
from app.config.errors import ConfigError
from app.config.paths import FamiliarExistsError, FamiliarPaths, create_familiar, list_familiars
from app.config.secrets import SecretStore
from app.lore.book import load_lorebook
from app.lore.scanner import LoreScanner
from app.runtime.cards import (
    CARD_FILE,
    IMAGE_FILE,
    SECTIONS,
    CardError,
    CardNameError,
    alternate_greetings,
    create_familiar_from_card,
    familiar_card,
    familiar_name_for,
    normalise,
    parse_persona,
    read_card,
    render_persona,
    write_card,
)
from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM

SAMPLES = Path(__file__).parent / "samples"


def sample(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SAMPLES / name).read_text(encoding="utf-8"))
    return document


def kept(original: Any, exported: Any, where: str = "$") -> list[str]:
    """Every field of `original` is in `exported` with the same value (objects may gain fields)."""
    if isinstance(original, dict):
        if not isinstance(exported, dict):
            return [f"{where}: expected an object, got {exported!r}"]
        out = []
        for key, value in original.items():
            if key not in exported:
                out.append(f"{where}.{key}: missing")
            else:
                out.extend(kept(value, exported[key], f"{where}.{key}"))
        return out
    if isinstance(original, list):
        if not isinstance(exported, list) or len(original) != len(exported):
            return [f"{where}: {original!r} != {exported!r}"]
        return [
            problem
            for i, (a, b) in enumerate(zip(original, exported, strict=True))
            for problem in kept(a, b, f"{where}[{i}]")
        ]
    return (
        [] if original == exported and type(original) is type(exported) else [f"{where}: {original!r} != {exported!r}"]
    )


def without_book(card: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(card))
    out["data"].pop("character_book", None)
    return out


def same_as_original(original: dict[str, Any], exported: dict[str, Any]) -> None:
    """The export is the original card: exactly, but for the book, which keeps every original field."""
    assert without_book(exported) == without_book(original)
    assert kept(original["data"]["character_book"], exported["data"]["character_book"]) == []


def as_v3(v2: dict[str, Any]) -> dict[str, Any]:
    """What a V2 card is as a V3 card: the spec changes, and V3's one required new field is added."""
    v3 = json.loads(json.dumps(v2))
    v3["spec"], v3["spec_version"] = "chara_card_v3", "3.0"
    v3["data"]["group_only_greetings"] = []
    return v3


def b64(document: Any) -> str:
    return base64.b64encode(json.dumps(document).encode("utf-8")).decode("ascii")


def portrait() -> Image.Image:
    image = Image.new("RGB", (48, 72), (20, 30, 60))
    draw = ImageDraw.Draw(image)
    draw.ellipse((8, 10, 40, 42), fill=(250, 200, 80))
    draw.rectangle((0, 60, 47, 71), fill=(90, 40, 10))
    return image


def pillow_png(
    path: Path, texts: list[tuple[str, str]], *, chunk: str = "tEXt", image: Image.Image | None = None
) -> Path:
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "familiar tests")
    for keyword, text in texts:
        if chunk == "iTXt":
            info.add_itxt(keyword, text, zip=True)
        else:
            info.add_text(keyword, text, zip=chunk == "zTXt")
    (image or portrait()).save(path, pnginfo=info)
    return path


def png_cards(path: Path) -> dict[str, Any]:
    """The cards in a PNG's text chunks, read by Pillow."""
    with Image.open(path) as image:
        texts = dict(image.text)
    return {k: json.loads(base64.b64decode(v)) for k, v in texts.items() if k in ("chara", "ccv3")}


def pixels(path: Path) -> bytes:
    with Image.open(path) as image:
        return image.convert("RGB").tobytes()


def exported_json(paths: FamiliarPaths, target: Path) -> dict[str, Any]:
    done = write_card(paths, target)
    assert done.format == "json"
    written: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    assert written == done.card
    return written


def familiars(root: Path) -> list[str]:
    """Every entry of the familiars folder, hidden ones too (a half-built familiar would show here)."""
    folder = root / "familiars"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# -- golden round trips --------------------------------------------------------------------------------


def test_a_v3_json_card_round_trips(tmp_path: Path) -> None:
    root = tmp_path / "home"
    original = sample("rook_v3.json")
    made = create_familiar_from_card(SAMPLES / "rook_v3.json", root)
    assert (made.name, made.display_name, made.entries) == ("Captain-Rook", "Captain Rook", 3)
    paths = FamiliarPaths(root, made.name)
    first = exported_json(paths, tmp_path / "rook.json")
    same_as_original(original, first)
    entry = first["data"]["character_book"]["entries"][0]
    assert entry["content"] == "@@depth 4\n@@role assistant\nThe ferry is called the Gull and leaks at the stern."
    assert entry["extensions"]["x_unknown_extension"] == {"why": "kept"}

    again = create_familiar_from_card(tmp_path / "rook.json", root, "rook-again")
    assert exported_json(FamiliarPaths(root, again.name), tmp_path / "again.json") == first


def test_a_v2_json_card_round_trips_as_v3(tmp_path: Path) -> None:
    root = tmp_path / "home"
    original = sample("wisp_v2.json")
    made = create_familiar_from_card(SAMPLES / "wisp_v2.json", root)
    paths = FamiliarPaths(root, made.name)
    first = exported_json(paths, tmp_path / "wisp.json")
    same_as_original(as_v3(original), first)
    assert first["name"] == "Wisp"  # SillyTavern's top-level copies come along
    decorated = first["data"]["character_book"]["entries"][1]
    assert decorated["content"] == "@@depth 2\n@@@scan_depth 3\n\nOn stormy nights the lighthouse lamp turns green."
    assert first["data"]["character_book"]["entries"][0]["extensions"]["x_unknown_extension"] == {
        "keep": "me",
        "n": [1, 2, 3],
    }
    # As a V2 card (a PNG's chara chunk) it is the original card.
    same_as_original(original, familiar_card(paths, version=2))

    again = create_familiar_from_card(tmp_path / "wisp.json", root, "wisp-again")
    assert exported_json(FamiliarPaths(root, again.name), tmp_path / "again.json") == first


def test_a_v2_png_card_round_trips_keeping_its_image(tmp_path: Path) -> None:
    root = tmp_path / "home"
    original = sample("wisp_v2.json")
    card = pillow_png(tmp_path / "wisp.png", [("chara", b64(original))])
    made = create_familiar_from_card(card, root)
    assert made.source == "a Character Card V2 (PNG, 'chara' chunk)"
    assert made.has_image
    paths = FamiliarPaths(root, made.name)
    assert pixels(paths.folder / IMAGE_FILE) == pixels(card)
    assert png_cards(paths.folder / IMAGE_FILE) == {}, "the kept image carries no stale card"

    target = tmp_path / "out" / "wisp.png"
    done = write_card(paths, target)
    assert (done.format, done.image, done.entries) == ("png", "the card's own image", 3)
    cards = png_cards(target)
    same_as_original(original, cards["chara"])
    same_as_original(as_v3(original), cards["ccv3"])
    assert cards["ccv3"] == done.card
    assert pixels(target) == pixels(card)
    with Image.open(target) as image:
        assert image.text["Software"] == "familiar tests"  # the image's other chunks stay

    # Re-imported, the export is read from its ccv3 chunk: the same card again. From then on its chara chunk is
    # that V3 card with the V2 spec (as for any V3 card), and every further round trip gives the same file.
    again = create_familiar_from_card(target, root, "wisp-again")
    assert again.source == "a Character Card V3 (PNG, 'ccv3' chunk)"
    assert write_card(FamiliarPaths(root, again.name), tmp_path / "again.png").card == cards["ccv3"]
    assert png_cards(tmp_path / "again.png")["ccv3"] == cards["ccv3"]
    create_familiar_from_card(tmp_path / "again.png", root, "wisp-third")
    write_card(FamiliarPaths(root, "wisp-third"), tmp_path / "third.png")
    assert (tmp_path / "third.png").read_bytes() == (tmp_path / "again.png").read_bytes()


def test_a_v3_png_card_with_both_chunks_is_read_from_ccv3_and_round_trips(tmp_path: Path) -> None:
    root = tmp_path / "home"
    original = sample("rook_v3.json")
    as_v2 = json.loads(json.dumps(original))
    as_v2["spec"], as_v2["spec_version"] = "chara_card_v2", "2.0"
    for v3_only in ("nickname", "group_only_greetings", "assets", "source", "creator_notes_multilingual"):
        del as_v2["data"][v3_only]
    card = pillow_png(tmp_path / "rook.png", [("chara", b64(as_v2)), ("ccv3", b64(original))])
    made = create_familiar_from_card(card, root, "rook")
    assert made.source == "a Character Card V3 (PNG, 'ccv3' chunk)"
    paths = FamiliarPaths(root, "rook")
    assert json.loads((paths.folder / CARD_FILE).read_text(encoding="utf-8")) == original

    target = tmp_path / "rook-out.PNG"  # the suffix in any case
    write_card(paths, target)
    cards = png_cards(target)
    same_as_original(original, cards["ccv3"])
    v2 = cards["chara"]
    assert (v2["spec"], v2["spec_version"]) == ("chara_card_v2", "2.0")
    assert {**v2, "spec": "chara_card_v3", "spec_version": "3.0"} == cards["ccv3"]  # as SillyTavern writes it
    assert pixels(target) == pixels(card)

    create_familiar_from_card(target, root, "rook-again")
    write_card(FamiliarPaths(root, "rook-again"), tmp_path / "again.png")
    assert png_cards(tmp_path / "again.png") == cards


@pytest.mark.parametrize("chunk", ["zTXt", "iTXt"])
def test_compressed_text_chunks_are_read(tmp_path: Path, chunk: str) -> None:
    card = pillow_png(tmp_path / "rook.png", [("ccv3", b64(sample("rook_v3.json")))], chunk=chunk)
    made = create_familiar_from_card(card, tmp_path / "home")
    assert made.display_name == "Captain Rook"


def test_a_card_without_an_image_exports_a_placeholder_png(tmp_path: Path) -> None:
    root = tmp_path / "home"
    made = create_familiar_from_card(SAMPLES / "rook_v3.json", root)
    done = write_card(FamiliarPaths(root, made.name), tmp_path / "rook.png")
    assert done.image == "a placeholder image"
    with Image.open(tmp_path / "rook.png") as image:
        image.load()  # decodes every row: a well-formed PNG
        assert (image.format, image.size, image.mode) == ("PNG", (400, 600), "RGB")
        assert image.getpixel((0, 0)) != image.getpixel((0, 599))  # a gradient, not a blank
    assert png_cards(tmp_path / "rook.png")["ccv3"] == done.card


# -- what the familiar is made of ----------------------------------------------------------------------


def test_the_card_becomes_persona_greeting_settings_and_lorebook(tmp_path: Path) -> None:
    root = tmp_path / "home"
    original = sample("wisp_v2.json")["data"]
    made = create_familiar_from_card(SAMPLES / "wisp_v2.json", root)
    paths = FamiliarPaths(root, made.name)
    persona = paths.character_md.read_text(encoding="utf-8")
    assert persona.startswith("# Wisp\n\n## Description\n\n{{char}} is a small lantern spirit")
    assert "## Personality\n\ncurious, warm, a little vain about her glow\n" in persona
    assert "## Post-history instructions\n\nKeep replies under three sentences.\nNever speak for {{user}}." in persona
    assert "\\## Personality\n{{char}}: (she says" in persona  # a heading inside a field is escaped
    for heading in ("## Scenario", "## System prompt", "## Example dialogue"):
        assert f"\n{heading}\n" in persona
    parsed = parse_persona(persona)
    for key, _heading in SECTIONS:
        assert parsed[key] == normalise(original[key])

    settings = tomllib.loads(paths.character_toml.read_text(encoding="utf-8"))
    assert settings["familiar"] == {"display_name": "Wisp", "greeting": original["first_mes"]}
    assert settings["llm"]["max_retries"] == 2, "the rest is the template's"

    book = load_lorebook(paths.lorebook_toml)
    assert [e.title for e in book.entries] == ["Ember the dragon", "The lighthouse at night", "Fog (off for now)"]
    assert "Wisp lives" not in paths.lorebook_toml.read_text(encoding="utf-8"), "not the template's lore"
    fired = LoreScanner(book).activate(["Did you see the beacon in the storm last night?"])
    assert [m.entry.content.strip() for m in fired] == ["On stormy nights the lighthouse lamp turns green."]
    assert json.loads((paths.folder / CARD_FILE).read_text(encoding="utf-8")) == sample("wisp_v2.json")
    assert not (paths.folder / IMAGE_FILE).exists()


def test_the_card_s_alternate_greetings_are_kept_to_open_the_chat_with(tmp_path: Path) -> None:
    made = create_familiar_from_card(SAMPLES / "wisp_v2.json", tmp_path / "home")
    assert alternate_greetings(made.folder) == ["*A lantern sways in the wind.* Stormy night, isn't it?"]
    assert alternate_greetings(tmp_path) == []  # not made from a card
    (tmp_path / CARD_FILE).write_text("{not json", encoding="utf-8")
    assert alternate_greetings(tmp_path) == []  # a damaged card.json costs the alternates only
    card = sample("rook_v3.json")
    card["data"]["alternate_greetings"] = ["", "  ", 7, "Ahoy."]
    (tmp_path / CARD_FILE).write_text(json.dumps(card), encoding="utf-8")
    assert alternate_greetings(tmp_path) == ["Ahoy."]


def test_a_card_without_a_book_gets_an_empty_lorebook_and_exports_none(tmp_path: Path) -> None:
    card = sample("rook_v3.json")
    del card["data"]["character_book"]
    (tmp_path / "plain.json").write_text(json.dumps(card), encoding="utf-8")
    made = create_familiar_from_card(tmp_path / "plain.json", tmp_path / "home")
    paths = FamiliarPaths(tmp_path / "home", made.name)
    assert made.entries == 0
    assert load_lorebook(paths.lorebook_toml).entries == ()
    assert exported_json(paths, tmp_path / "out.json") == card


@pytest.mark.asyncio
async def test_an_imported_familiar_replies_with_the_card_s_persona_and_lore(tmp_path: Path, fake_llm: FakeLLM) -> None:
    root = tmp_path / "home"
    made = create_familiar_from_card(SAMPLES / "rook_v3.json", root)
    paths = FamiliarPaths(root, made.name)
    env = {"FAMILIAR_LLM_BASE_URL": fake_llm.base_url, "FAMILIAR_LLM_MODEL": "test-model"}
    familiar = await Familiar.open(paths, SecretStore(made.name, paths.secrets_file, use_keyring=False), env=env)
    try:
        line = await familiar.chat_local("Is the ferry safe in a storm?")
    finally:
        await familiar.close()
    assert line.author == "Captain Rook"
    (request,) = await fake_llm.wait_for_requests(1)
    prompt = "\n".join(str(m.get("content")) for m in request.messages)
    assert "Captain Rook ferries travellers between Saltmere and the outer isles." in prompt
    assert "gruff, loyal, superstitious" in prompt
    assert "The ferry is called the Gull and leaks at the stern." in prompt
    assert "@@depth" not in prompt, "decorators are kept for export, not sent"


def test_edits_to_the_familiar_reach_the_exported_card(tmp_path: Path) -> None:
    root = tmp_path / "home"
    original = sample("wisp_v2.json")
    made = create_familiar_from_card(SAMPLES / "wisp_v2.json", root)
    paths = FamiliarPaths(root, made.name)
    persona = paths.character_md.read_text(encoding="utf-8")
    paths.character_md.write_text(
        persona.replace("curious, warm, a little vain about her glow", "shy now, and much dimmer"), encoding="utf-8"
    )
    set_values(paths.character_toml, {"familiar.display_name": "Will-o'-Wisp", "familiar.greeting": "Hello."})
    with paths.lorebook_toml.open("a", encoding="utf-8") as lore:
        lore.write('\n[[entries]]\ntitle = "Kettle"\nkeys = ["kettle"]\ncontent = "The kettle sings."\n')
    card = exported_json(paths, tmp_path / "edited.json")
    data = card["data"]
    assert (data["name"], data["personality"], data["first_mes"]) == (
        "Will-o'-Wisp",
        "shy now, and much dimmer",
        "Hello.",
    )
    assert (card["name"], card["personality"], card["first_mes"]) == (
        "Will-o'-Wisp",
        "shy now, and much dimmer",
        "Hello.",
    )
    assert data["description"] == original["data"]["description"]
    assert data["system_prompt"] == original["data"]["system_prompt"], "unedited text is the card's, trailing space too"
    assert data["post_history_instructions"] == original["data"]["post_history_instructions"], "\\r\\n too"
    assert data["alternate_greetings"] == original["data"]["alternate_greetings"]
    assert [e["comment"] for e in data["character_book"]["entries"]][-1] == "Kettle"
    assert data["character_book"]["entries"][-1]["keys"] == ["kettle"]


def test_a_familiar_not_made_from_a_card_exports_its_persona_as_the_description(tmp_path: Path) -> None:
    paths = FamiliarPaths(tmp_path / "home", "wisp")
    create_familiar(paths)
    card = exported_json(paths, tmp_path / "wisp.json")
    assert (card["spec"], card["spec_version"]) == ("chara_card_v3", "3.0")
    data = card["data"]
    assert data["name"] == "Wisp"
    assert data["description"].startswith("You are Wisp, a small, curious familiar")
    assert (data["first_mes"], data["group_only_greetings"], data["extensions"]) == ("", [], {})
    assert [e["comment"] for e in data["character_book"]["entries"]] == ["The familiar's home"]
    made = create_familiar_from_card(tmp_path / "wisp.json", tmp_path / "home", "wisp-card")
    assert exported_json(FamiliarPaths(tmp_path / "home", made.name), tmp_path / "again.json") == card


# -- names -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card_name", "name"),
    [
        ("Wisp", "Wisp"),
        ("Captain Rook!", "Captain-Rook"),
        ("  Zoë & Ann ", "Zoe-Ann"),
        ("ユキ", ""),
        ("x" * 80, "x" * 64),
    ],
)
def test_familiar_names_from_card_names(card_name: str, name: str) -> None:
    assert familiar_name_for(card_name) == name


def test_an_existing_familiar_is_never_overwritten(tmp_path: Path) -> None:
    root = tmp_path / "home"
    create_familiar_from_card(SAMPLES / "rook_v3.json", root)
    paths = FamiliarPaths(root, "Captain-Rook")
    paths.character_md.write_text("my own edits\n", encoding="utf-8")
    with pytest.raises(FamiliarExistsError, match="a familiar named 'Captain-Rook' already exists"):
        create_familiar_from_card(SAMPLES / "rook_v3.json", root)
    assert paths.character_md.read_text(encoding="utf-8") == "my own edits\n"
    assert familiars(root) == ["Captain-Rook"]


def test_a_card_name_without_usable_letters_needs_a_name(tmp_path: Path) -> None:
    card = sample("rook_v3.json")
    card["data"]["name"] = "ユキ"
    (tmp_path / "yuki.json").write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(CardNameError) as caught:
        create_familiar_from_card(tmp_path / "yuki.json", tmp_path / "home")
    assert (
        str(caught.value)
        == f"{tmp_path / 'yuki.json'}: the card's name 'ユキ' has no letters a folder name can use; choose a name"
    )
    made = create_familiar_from_card(tmp_path / "yuki.json", tmp_path / "home", "yuki")
    assert made.display_name == "ユキ"
    with pytest.raises(ConfigError, match="a familiar's name may use"):
        create_familiar_from_card(tmp_path / "yuki.json", tmp_path / "home", "../escape")
    assert list_familiars(tmp_path / "home") == ["yuki"]


# -- bad cards: one line, nothing created --------------------------------------------------------------


def _png_with_chunk(path: Path, keyword: str, text: str) -> Path:
    return pillow_png(path, [(keyword, text)])


def _bad_cards(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = sample("rook_v3.json")
    good_png = pillow_png(tmp_path / "good.png", [("ccv3", b64(good))]).read_bytes()
    plain = io.BytesIO()
    portrait().save(plain, format="PNG")

    def file(name: str, content: bytes | str) -> Path:
        path = tmp_path / "bad" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    def card(**changes: Any) -> str:
        document = json.loads(json.dumps(good))
        for key, value in changes.items():
            target = document["data"] if key.startswith("data_") else document
            name = key.removeprefix("data_")
            if value is None:
                target.pop(name, None)
            else:
                target[name] = value
        return json.dumps(document)

    crc_broken = bytearray(good_png)
    crc_broken[-20] ^= 0xFF  # inside the last text chunk
    return {
        "json named png": (file("card.png", json.dumps(good)), "not a PNG (it does not start with the PNG signature)"),
        "jpeg": (file("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"), "a JPEG image, not a card"),
        "no chunk": (file("plain.png", plain.getvalue()), "a PNG without a character card in it"),
        "bad base64": (
            _png_with_chunk(tmp_path / "b64.png", "chara", "eyJub3Qi!!!"),
            "the 'chara' chunk is not valid base64",
        ),
        "empty chunk": (_png_with_chunk(tmp_path / "empty.png", "ccv3", "  "), "the 'ccv3' chunk is empty"),
        "chunk not utf-8": (
            _png_with_chunk(tmp_path / "latin.png", "chara", base64.b64encode(b'{"spec": "\xff"}').decode()),
            "the 'chara' chunk does not decode to UTF-8 text",
        ),
        "bad json in chunk": (
            _png_with_chunk(tmp_path / "json.png", "ccv3", base64.b64encode(b"{oops").decode()),
            "the 'ccv3' chunk is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        ),
        "bad json file": (file("card.json", '{"spec": "chara_card_v3",'), "the file is not valid JSON"),
        "not utf-8 file": (file("card.txt", b"\x00\xff\xfe binary"), "neither a PNG image nor JSON text"),
        "truncated png": (file("cut.png", good_png[:-30]), "damaged PNG"),
        "checksum": (file("crc.png", bytes(crc_broken)), "fails its checksum"),
        "wrong spec": (file("v4.json", card(spec="chara_card_v4")), "unknown spec 'chara_card_v4'"),
        "lorebook": (file("book.json", card(spec="lorebook_v3")), "a lorebook_v3 file, not a character card"),
        "world info": (file("wi.json", '{"entries": {}}'), "a lorebook, not a character card"),
        "v1": (file("v1.json", '{"name": "Old", "description": "x", "first_mes": "hi"}'), "a Character Card V1"),
        "no spec": (file("nospec.json", '{"hello": 1}'), "not a character card: it has no 'spec'"),
        "list": (file("list.json", "[1, 2]"), "expected a JSON object (a character card), found a list"),
        "spec version": (
            file("ver.json", card(spec_version="2.0")),
            "spec_version '2.0' is not a version of chara_card_v3",
        ),
        "no data": (file("nodata.json", card(data="nope")), "a chara_card_v3 card needs a 'data' object, found text"),
        "no name": (file("noname.json", card(data_name="   ")), "the card has no name"),
        "number description": (
            file("num.json", card(data_description=5)),
            "data.description must be text, found a number",
        ),
        "book not object": (file("book2.json", card(data_character_book=[])), "data.character_book must be an object"),
        "bad book": (
            file("book3.json", card(data_character_book={"entries": {"0": {}}})),
            "its character_book: the 'entries' of the character_book of a Character Card V3 must be a list",
        ),
        "missing file": (tmp_path / "nowhere.png", "no such file"),
        "folder": (tmp_path, "is a folder, not a file"),
    }


def test_bad_cards_get_one_line_and_change_nothing(tmp_path: Path) -> None:
    root = tmp_path / "home"
    create_familiar(FamiliarPaths(root, "default"))
    before = {p: p.read_bytes() for p in (root / "familiars").rglob("*") if p.is_file()}
    for case, (path, message) in _bad_cards(tmp_path).items():
        with pytest.raises(CardError) as caught:
            create_familiar_from_card(path, root, "newcomer")
        text = str(caught.value)
        assert message in text, case
        assert text.startswith(f"{path}: "), case
        assert "\n" not in text, case
        assert familiars(root) == ["default"], case
    assert {p: p.read_bytes() for p in (root / "familiars").rglob("*") if p.is_file()} == before


def test_read_card_prefers_ccv3_even_when_chara_is_broken(tmp_path: Path) -> None:
    card = pillow_png(tmp_path / "x.png", [("chara", "not base64!"), ("ccv3", b64(sample("rook_v3.json")))])
    assert read_card(card).version == 3
    broken = pillow_png(tmp_path / "y.png", [("chara", b64(sample("wisp_v2.json"))), ("ccv3", "not base64!")])
    with pytest.raises(CardError, match="the 'ccv3' chunk is not valid base64"):
        read_card(broken)


def test_a_hostile_compressed_chunk_is_refused(tmp_path: Path) -> None:
    packer = zlib.compressobj(9)
    megabyte = b"A" * 2**20
    bomb = b"".join(packer.compress(megabyte) for _ in range(80)) + packer.flush()  # 80 MB in about 80 kB
    image = io.BytesIO()
    portrait().save(image, format="PNG")
    raw = image.getvalue()
    chunk_data = b"ccv3\0\0" + bomb
    chunk = (
        len(chunk_data).to_bytes(4, "big") + b"zTXt" + chunk_data + zlib.crc32(b"zTXt" + chunk_data).to_bytes(4, "big")
    )
    iend = raw.rindex(b"IEND") - 4
    (tmp_path / "bomb.png").write_bytes(raw[:iend] + chunk + raw[iend:])
    with pytest.raises(CardError, match="inflates beyond 64 MB"):
        read_card(tmp_path / "bomb.png")


def test_export_errors_write_nothing(tmp_path: Path) -> None:
    root = tmp_path / "home"
    made = create_familiar_from_card(SAMPLES / "rook_v3.json", root)
    paths = FamiliarPaths(root, made.name)
    paths.lorebook_toml.write_text('[[entries]]\nkeys = ["x"]\npriority = "high"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="priority"):
        write_card(paths, tmp_path / "out.png")
    assert not (tmp_path / "out.png").exists()
    paths.lorebook_toml.write_text("", encoding="utf-8")
    (paths.folder / CARD_FILE).write_text("{damaged", encoding="utf-8")
    with pytest.raises(CardError, match="the card this familiar came from"):
        write_card(paths, tmp_path / "out.json")
    assert list(tmp_path.glob("*out*")) == []


# -- the persona's Markdown ----------------------------------------------------------------------------

_PIECES = ["a", " ", "\n", "\r", "#", "\\", "## Personality", "## scenario ", "# Title", "\ud800", "é"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({key: _TEXT for key, _heading in SECTIONS}), st.text(max_size=20))
def test_persona_sections_read_back_as_written(fields: dict[str, str], name: str) -> None:
    parsed = parse_persona(render_persona(name, fields))
    assert parsed == {key: normalise(value) for key, value in fields.items()}


def test_a_free_form_persona_is_the_description() -> None:
    assert parse_persona("# Wisp\n\nYou are Wisp.\n\nBe kind.\n")["description"] == "You are Wisp.\n\nBe kind."
    assert parse_persona("No title here.\n## Personality\n\nshy\n") == {
        "description": "No title here.",
        "personality": "shy",
        "scenario": "",
        "mes_example": "",
        "system_prompt": "",
        "post_history_instructions": "",
    }
