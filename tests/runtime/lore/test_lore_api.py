"""`facade.lore` on the real familiar and real files: load and save against a revision (and the conflict when
the file changed on disk), lint, try (texts and a place's messages), import with a preview that makes a second
import of the same file add nothing (JSON and PNG cards), export."""

from __future__ import annotations

import base64
import dataclasses
import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.lore.book import BOOK_SETTINGS, Lorebook
from app.lore.importing import ENTRY_DEFAULTS
from app.runtime.api.lore import EDIT_FIELDS, LoreConflictError
from app.runtime.api.views import LoreBookSettings, LoreEntryView, LoreSpan
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from tests.conftest import TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.runtime.test_cards import pillow_png

pytestmark = pytest.mark.asyncio

SAMPLES = Path(__file__).resolve().parents[2] / "lore" / "samples"
WISP = Path(__file__).resolve().parents[1] / "samples" / "wisp_v2.json"
BOOK = """\
# Saltmere lore, by hand.
scan_depth = 6  # six turns

[[entries]]
# the dragon
title = "Ember"
keys = ["Ember", "red dragon"]
content = "Ember sleeps under the lighthouse."

[entries.extensions]
mood = "grumpy"

# the light
[[entries]]
title = "Lighthouse"
keys = ["lighthouse"]
priority = 250
content = "The lighthouse has no keeper."
"""


@pytest_asyncio.fixture
async def familiar(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> AsyncIterator[Familiar]:
    write_character_toml(familiar_paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    familiar_paths.lorebook_toml.write_text(BOOK, encoding="utf-8")
    secrets = SecretStore("default", familiar_paths.secrets_file, use_keyring=False)
    instance = await Familiar.open(familiar_paths, secrets, env={"DISCORD_TOKEN": TOKEN})
    yield instance
    await instance.close()


def lorebook(familiar: Familiar) -> Path:
    return familiar.lorebook_layer.file.path


# -- load and save -----------------------------------------------------------------------------------------
async def test_load_gives_entries_settings_and_a_revision(familiar: Familiar) -> None:
    book = await familiar.lore.load()
    digest, mtime = book.revision.split(":")
    assert len(digest) == 64
    assert int(mtime) == lorebook(familiar).stat().st_mtime_ns
    assert book.settings == LoreBookSettings(scan_depth=6)
    ember, light = book.entries
    assert (ember.ref, ember.position, ember.title, ember.keys) == (0, 1, "Ember", ("Ember", "red dragon"))
    assert ember.tokens == familiar.lore.count_tokens("Ember sleeps under the lighthouse.")
    assert (light.priority, light.enabled) == (250, True)
    assert book.total_tokens == ember.tokens + light.tokens
    assert book.constant_tokens == 0


async def test_saving_one_edit_changes_only_that_entry_and_is_in_use_at_once(
    familiar: Familiar, fake_llm: FakeLLM
) -> None:
    book = await familiar.lore.load()
    ember, light = book.entries
    edited = dataclasses.replace(light, content="The lighthouse is haunted.", sticky=2, group="places")
    saved = await familiar.lore.save([ember, edited], book.revision)
    text = lorebook(familiar).read_text(encoding="utf-8")
    before = BOOK.split("# the light\n")[0]
    assert text.startswith(before + "# the light\n")  # the first entry and every comment: byte for byte
    assert text.count("# the light") == 1
    assert 'content = "The lighthouse is haunted."' in text
    assert "sticky = 2" in text
    assert 'mood = "grumpy"' in text
    assert saved.revision != book.revision
    assert saved.entries[0] is ember  # what did not change is the same record
    assert (saved.entries[1].content, saved.entries[1].sticky, saved.entries[1].ref) == (
        "The lighthouse is haunted.",
        2,
        1,
    )
    await familiar.chat_local("what about the lighthouse?")
    assert "The lighthouse is haunted." in fake_llm.requests[-1].messages[0]["content"]


async def test_a_save_against_a_revision_the_file_no_longer_has_is_refused(familiar: Familiar) -> None:
    book = await familiar.lore.load()
    by_hand = BOOK + '\n[[entries]]\ntitle = "Added by hand"\nkeys = ["hand"]\n'
    lorebook(familiar).write_text(by_hand, encoding="utf-8")
    with pytest.raises(LoreConflictError) as caught:
        await familiar.lore.save([dataclasses.replace(book.entries[0], priority=1)], book.revision)
    assert "changed on disk since it was loaded; nothing was written" in str(caught.value)
    assert lorebook(familiar).read_text(encoding="utf-8") == by_hand  # never overwritten silently
    again = await familiar.lore.load()
    assert caught.value.current == again.revision
    await familiar.lore.save([dataclasses.replace(e, priority=5) for e in again.entries], again.revision)
    assert [e.priority for e in (await familiar.lore.load()).entries] == [5, 5, 5]


async def test_adding_removing_and_reordering_in_one_save(familiar: Familiar) -> None:
    book = await familiar.lore.load()
    light = book.entries[1]
    new = LoreEntryView(title="Owl", keys=("owl",), content="An owl.", decorators=("@@activate_only_every 2",))
    saved = await familiar.lore.save([new, light], book.revision)
    assert [(e.ref, e.title) for e in saved.entries] == [(0, "Owl"), (1, "Lighthouse")]
    data = tomllib.loads(lorebook(familiar).read_text(encoding="utf-8"))
    assert [e["title"] for e in data["entries"]] == ["Owl", "Lighthouse"]
    assert data["entries"][0]["extensions"] == {"decorators": ["@@activate_only_every 2"]}
    assert "# Saltmere lore, by hand." in lorebook(familiar).read_text(encoding="utf-8")
    settings = dataclasses.replace(saved.settings, recursive_scanning=False, name="Saltmere")
    resaved = await familiar.lore.save(saved.entries, saved.revision, settings=settings)
    assert resaved.settings == settings
    text = lorebook(familiar).read_text(encoding="utf-8")
    assert "scan_depth = 6  # six turns" in text
    assert tomllib.loads(text)["recursive_scanning"] is False


async def test_an_invalid_edit_names_the_entry_and_writes_nothing(familiar: Familiar) -> None:
    book = await familiar.lore.load()
    bad = dataclasses.replace(book.entries[1], probability=150)
    with pytest.raises(FamiliarError, match=r"entry 2 \"Lighthouse\", key 'probability': 150 is out of range"):
        await familiar.lore.save([book.entries[0], bad], book.revision)
    assert lorebook(familiar).read_text(encoding="utf-8") == BOOK
    saved = await familiar.lore.save([book.entries[0]], book.revision)  # the bad edit left nothing behind
    assert [e.title for e in saved.entries] == ["Ember"]


# -- lint and try ------------------------------------------------------------------------------------------
async def test_lint_finds_what_likely_does_not_do_what_was_meant(familiar: Familiar) -> None:
    draft = [
        LoreEntryView(title="Regex", keys=("/(/",)),
        LoreEntryView(title="AI", keys=("AI",), whole_words=False),
        *(LoreEntryView(title=f"Sea {i}", keys=("the sea",)) for i in range(3)),
        LoreEntryView(title="Nothing", content="no keys"),
        LoreEntryView(title="Off", enabled=False),
    ]
    found = {(lint.title, lint.kind) for lint in await familiar.lore.lint(draft)}
    assert found == {
        ("Regex", "invalid_key"),
        ("Regex", "never_fires"),
        ("AI", "inner_word"),
        ("Sea 0", "shared_key"),
        ("Sea 1", "shared_key"),
        ("Sea 2", "shared_key"),
        ("Nothing", "never_fires"),
    }
    shared = next(lint for lint in await familiar.lore.lint(draft) if lint.title == "Sea 0")
    assert shared.others == (3, 4)
    assert await familiar.lore.lint() == []  # the book on disk is fine
    assert familiar.lore.check_key("/(/") is not None
    assert familiar.lore.check_key("/fine/i") is None


async def test_try_text_shows_spans_the_recursion_chain_and_budget_drops(familiar: Familiar) -> None:
    trial = await familiar.lore.try_text(["Alice: the red dragon roars"], seed=3)
    # in the prompt's order (priority first), each with its step: the Lighthouse came through the Ember's content
    assert [(f.title, f.key, f.step) for f in trial.fired] == [
        ("Lighthouse", "lighthouse", 1),
        ("Ember", "red dragon", 0),
    ]
    assert trial.fired[1].span == LoreSpan("text", 11, 21, position=0)
    assert trial.fired[0].span == LoreSpan("lore", 23, 33, entry=0)  # in the Ember's content
    assert trial.steps == ((0,), (1,))
    assert trial.block.startswith("## Lorebook\n")
    assert await familiar.lore.try_text(["Alice: the red dragon roars"], seed=3) == trial
    tight = LoreBookSettings(scan_depth=6, token_budget=16)
    book = await familiar.lore.load()
    squeezed = await familiar.lore.try_text(["the red dragon"], entries=book.entries, settings=tight)
    assert [f.title for f in squeezed.fired] == ["Lighthouse"]  # the higher priority keeps its place
    assert [(d.title, d.reason) for d in squeezed.dropped] == [("Ember", "budget")]
    assert squeezed.dropped[0].detail == "11 tokens do not fit in what is left of 16"
    assert squeezed.tokens <= squeezed.budget == 16


async def test_try_a_place_uses_its_messages_clock_and_timed_effects_without_changing_them(
    familiar: Familiar,
) -> None:
    book = await familiar.lore.load()
    sticky = dataclasses.replace(book.entries[0], sticky=3)
    await familiar.lore.save([sticky, book.entries[1]], book.revision)
    await familiar.chat_local("the red dragon!")
    await familiar.chat_local("and then?")
    effects = await familiar.lore.timed("local")
    assert [(e.title, e.kind, e.start, e.end, e.place.key) for e in effects] == [("Ember", "sticky", 1, 4, "local")]
    trial = await familiar.lore.try_place("local", last=1)
    assert trial.clock == 4  # the newest message of the local chat is its 4th
    assert [(f.title, f.via) for f in trial.fired] == [("Lighthouse", "key"), ("Ember", "sticky")]
    assert len(trial.texts) == 1
    assert trial.texts[0].startswith("Wisp: ")
    assert await familiar.lore.timed("local") == effects  # looked at, not changed
    with pytest.raises(FamiliarError, match="is not a place"):
        await familiar.lore.try_place("nowhere")


# -- import and export -------------------------------------------------------------------------------------
async def test_importing_the_same_file_twice_adds_nothing(familiar: Familiar) -> None:
    source = SAMPLES / "st_world_info.json"
    preview = await familiar.lore.import_preview(source)
    assert (preview.count("added"), preview.count("changed"), preview.count("unchanged")) == (8, 0, 0)
    outcome = await familiar.lore.import_apply(source, preview.revision)
    assert (outcome.added, outcome.updated, outcome.skipped) == (8, 0, 0)
    assert len(outcome.book.entries) == 10
    again = await familiar.lore.import_preview(source)
    assert {item.action for item in again.items} == {"unchanged"}
    assert [item.existing for item in again.items] == list(range(2, 10))
    outcome = await familiar.lore.import_apply(source, again.revision)
    assert (outcome.added, outcome.updated, outcome.skipped) == (0, 0, 8)
    assert len(outcome.book.entries) == 10


async def test_a_changed_entry_is_offered_as_changed_and_taken_only_when_chosen(
    familiar: Familiar, tmp_path: Path
) -> None:
    data = json.loads((SAMPLES / "st_world_info.json").read_text(encoding="utf-8"))
    first = tmp_path / "first.json"
    first.write_text(json.dumps(data), encoding="utf-8")
    preview = await familiar.lore.import_preview(first)
    await familiar.lore.import_apply(first, preview.revision)
    data["entries"]["0"]["content"] = "Ember has woken up."
    data["entries"]["99"] = {"uid": 99, "key": ["gull"], "comment": "Gull", "content": "A gull."}
    second = tmp_path / "second.json"
    second.write_text(json.dumps(data), encoding="utf-8")
    preview = await familiar.lore.import_preview(second)
    actions = {item.entry.title: (item.action, item.changed_fields) for item in preview.items}
    assert actions["Ember the dragon"] == ("changed", ("content",))
    assert actions["Gull"] == ("added", ())
    assert preview.count("unchanged") == 7
    gull = next(item.number for item in preview.items if item.entry.title == "Gull")
    outcome = await familiar.lore.import_apply(second, preview.revision, take={gull})
    assert (outcome.added, outcome.updated) == (1, 0)
    assert "Ember has woken up." not in lorebook(familiar).read_text(encoding="utf-8")
    preview = await familiar.lore.import_apply(second, outcome.book.revision)
    assert "Ember has woken up." in lorebook(familiar).read_text(encoding="utf-8")


async def test_an_import_into_an_editor_s_draft_writes_nothing_until_the_draft_is_saved(
    familiar: Familiar, tmp_path: Path
) -> None:
    """The window's import: a preview against the draft (with its unsaved edits), the chosen entries put in
    the draft, and a save that writes them with every field they came with, as `lore import` would."""
    source = SAMPLES / "st_world_info.json"
    book = await familiar.lore.load()
    on_disk = lorebook(familiar).read_text(encoding="utf-8")
    edited = dataclasses.replace(book.entries[1], content="The lighthouse has a keeper again.")
    draft = [book.entries[0], edited]
    preview = await familiar.lore.import_preview(source, draft, base_revision=book.revision)
    assert preview.count("added") == 8
    assert lorebook(familiar).read_text(encoding="utf-8") == on_disk  # a preview writes nothing
    taken = [
        dataclasses.replace(item.entry, content=item.entry.content + " (checked)") if n == 0 else item.entry
        for n, item in enumerate(preview.items)
    ]
    assert all(entry.imported is not None and entry.ref is None for entry in taken)
    # the same file against the draft that holds it now: nothing new in it (a second import adds nothing)
    again = await familiar.lore.import_preview(source, [*draft, *taken], base_revision=book.revision)
    assert [item.action for item in again.items] == ["changed"] + ["unchanged"] * 7
    assert again.items[0].changed_fields == ("content",)
    assert [item.existing for item in again.items] == list(range(2, 10))

    saved = await familiar.lore.save([*draft, *taken], book.revision)
    assert [e.title for e in saved.entries][:3] == ["Ember", "Lighthouse", "Ember the dragon"]
    assert all(e.imported is None for e in saved.entries)
    text = lorebook(familiar).read_text(encoding="utf-8")
    assert "# Saltmere lore, by hand." in text  # the file's comments and its own fields stay
    assert 'mood = "grumpy"' in text
    assert "The lighthouse has a keeper again." in text
    written = tomllib.loads(text)["entries"][2]
    assert written["content"].endswith("(checked)")  # the edit made to it after the import
    assert written["extensions"]["st"]["characterFilter"]["isExclude"] is False  # kept for the export
    # saved, it is what `lore import` would have made of the file: the file's entries are all in the book
    after = await familiar.lore.import_preview(source)
    assert [item.action for item in after.items] == ["changed"] + ["unchanged"] * 7
    # an import changing an entry of the draft: its fields replace the entry's when the draft is saved
    changed = dataclasses.replace(after.items[0].entry, ref=after.items[0].existing)
    saved = await familiar.lore.save(
        [changed if i == changed.ref else e for i, e in enumerate(saved.entries)], saved.revision
    )
    assert {item.action for item in (await familiar.lore.import_preview(source)).items} == {"unchanged"}
    lorebook(familiar).write_text(on_disk + "\n", encoding="utf-8")
    with pytest.raises(LoreConflictError):
        await familiar.lore.import_preview(source, saved.entries, base_revision=saved.revision)


async def test_a_png_card_s_lorebook_is_imported(familiar: Familiar, tmp_path: Path) -> None:
    card = json.loads(WISP.read_text("utf-8"))
    png = pillow_png(tmp_path / "wisp.png", [("chara", base64.b64encode(json.dumps(card).encode()).decode())])
    preview = await familiar.lore.import_preview(png)
    assert preview.format == "ccv2"
    assert preview.source == "the character_book of a Character Card V2"
    assert [item.entry.title for item in preview.items] == [
        "Ember the dragon",
        "The lighthouse at night",
        "Fog (off for now)",
    ]
    not_png = tmp_path / "broken.png"
    not_png.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(FamiliarError, match=rf"^{tmp_path / 'broken.png'}: "):
        await familiar.lore.import_preview(not_png)


async def test_export_in_each_format(familiar: Familiar, tmp_path: Path) -> None:
    for fmt in ("st", "ccv2", "ccv3"):
        assert await familiar.lore.export(tmp_path / f"out-{fmt}.json", fmt) == 2
    st = json.loads((tmp_path / "out-st.json").read_text(encoding="utf-8"))
    assert [e["comment"] for e in st["entries"].values()] == ["Ember", "Lighthouse"]
    with pytest.raises(FamiliarError, match="unknown format"):
        await familiar.lore.export(tmp_path / "x.json", "novelai")


async def test_the_editor_s_records_and_the_lorebook_s_schema_name_the_same_fields_and_defaults() -> None:
    """Issue 20 item 5: the import plan (app/lore/importing.py) compares entries with the schema's defaults
    left out, and the editor's records carry their own defaults: they must agree, field for field, or an
    entry the editor saved would not read as 'unchanged' when the same file is imported again. The book's
    settings are one list too (app.lore.book.BOOK_SETTINGS)."""
    blank = LoreEntryView()
    assert set(ENTRY_DEFAULTS) == set(EDIT_FIELDS)
    for name in EDIT_FIELDS:
        value = getattr(blank, name)
        assert ENTRY_DEFAULTS[name] == (list(value) if isinstance(value, tuple) else value), name
    settings = {f.name for f in dataclasses.fields(LoreBookSettings)}
    assert settings == {"name", "description", *BOOK_SETTINGS}
    assert set(BOOK_SETTINGS) <= {f.name for f in dataclasses.fields(Lorebook)}
