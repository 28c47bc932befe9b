"""`facade.setup` on the real runtime: where each setting in force comes from (character.toml, the OS keyring,
the secrets file, the environment), tests and model lists of the endpoint that would really be used, saving
(checked first, in force at once), the bot token check, and a character card made into the open familiar."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.api.setup_views import SettingSource, SettingsUpdate, TokenVerdict
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from tests.conftest import TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.keyring_backend import MemoryKeyring
from tests.fakes.llm_server import FakeLLM

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

SAMPLES = Path(__file__).parent / "samples"
NO_DISCORD = "http://127.0.0.1:9/api"


@pytest_asyncio.fixture
async def other_llm() -> AsyncIterator[FakeLLM]:
    fake = FakeLLM(models=("env-model",))
    await fake.start()
    yield fake
    await fake.close()
    assert fake.unhandled == []


async def open_familiar(
    paths: FamiliarPaths, llm_url: str, env: dict[str, str], *, use_keyring: bool = False, discord: str = NO_DISCORD
) -> Familiar:
    write_character_toml(paths, discord, "ws://127.0.0.1:9/", llm_url)
    return await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file, use_keyring=use_keyring), env=env)


async def test_each_value_in_force_says_where_it_comes_from(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM, memory_keyring: MemoryKeyring
) -> None:
    store = SecretStore("default", familiar_paths.secrets_file, use_keyring=True)
    store.set("llm_api_key", "sk-from-the-keyring-c0de")
    env = {"FAMILIAR_LLM_MODEL": "model-from-env", "DISCORD_TOKEN": "token.from.the-environment"}
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, env, use_keyring=True)
    try:
        view = await familiar.setup.current()
    finally:
        await familiar.close()

    base_url = view.get("llm.base_url")
    assert (base_url.value, base_url.source, base_url.describe()) == (
        fake_llm.base_url,
        SettingSource.FILE,
        "from character.toml",
    )
    assert base_url.variable == "FAMILIAR_LLM_BASE_URL"
    model = view.get("llm.model")
    assert (model.value, model.source, model.describe()) == (
        "model-from-env",
        SettingSource.ENVIRONMENT,
        "set by FAMILIAR_LLM_MODEL (environment)",
    )
    key = view.get("llm_api_key")
    assert (key.value, key.hint, key.source, key.describe()) == (
        "",
        "…c0de",
        SettingSource.KEYRING,
        "saved in the OS keyring",
    )
    token = view.get("discord_token")
    assert (token.source, token.variable, token.hint) == (SettingSource.ENVIRONMENT, "DISCORD_TOKEN", "…ment")
    background = view.get("llm.background.base_url")
    assert (background.value, background.source, background.describe()) == ("", SettingSource.DEFAULT, "not set")
    assert view.get("llm_background_api_key").source is SettingSource.DEFAULT
    assert view.background_follows_replies
    assert view.display_name == "Wisp"
    assert view.secrets_location == "OS keyring"
    assert memory_keyring.passwords[("familiar", "default:llm_api_key")] == "sk-from-the-keyring-c0de"


async def test_without_a_keyring_secrets_come_from_the_secrets_file(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    SecretStore("default", familiar_paths.secrets_file, use_keyring=False).set("discord_token", "abc.def.ghi")
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {})
    try:
        token = (await familiar.setup.current()).get("discord_token")
    finally:
        await familiar.close()
    assert token.source is SettingSource.SECRETS_FILE
    assert token.origin == str(familiar_paths.secrets_file)
    assert token.describe() == f"saved in {familiar_paths.secrets_file}"
    assert token.hint == "set", "a short secret shows no characters of itself"


async def test_the_test_uses_the_environment_endpoint_over_a_typed_one_and_saves_nothing(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM, other_llm: FakeLLM
) -> None:
    env = {"FAMILIAR_LLM_BASE_URL": other_llm.base_url, "FAMILIAR_LLM_MODEL": "env-model"}
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, env)
    before = familiar_paths.character_toml.read_bytes()
    try:
        typed = SettingsUpdate(llm_base_url=fake_llm.base_url, llm_model="typed-model")
        result = await familiar.setup.test_endpoint(typed)
        models = await familiar.setup.list_models(typed)
    finally:
        await familiar.close()

    assert result.startswith(f"OK: model 'env-model' at {other_llm.base_url} answered in ")
    assert len(other_llm.requests) == 1
    assert fake_llm.requests == [], "the typed URL is not what would be used: it is not the one tested"
    assert (models.base_url, models.models, models.current) == (other_llm.base_url, ("env-model",), "env-model")
    assert familiar_paths.character_toml.read_bytes() == before, "a test saves nothing"


async def test_the_test_uses_typed_values_where_nothing_overrides_them(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    keyed = FakeLLM(api_key="sk-typed", models=("alpha", "Beta"))
    await keyed.start()
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {})
    try:
        draft = SettingsUpdate(llm_base_url=keyed.base_url, llm_api_key="sk-typed", llm_model="Beta")
        models = await familiar.setup.list_models(draft)
        result = await familiar.setup.test_endpoint(draft)
        background = await familiar.setup.list_models(draft, "background")  # follows the reply endpoint
    finally:
        await familiar.close()
        await keyed.close()
    assert models.models == ("alpha", "Beta")
    assert background.base_url == keyed.base_url
    assert result.startswith(f"OK: model 'Beta' at {keyed.base_url}")
    assert [r.headers["Authorization"] for r in keyed.requests] == ["Bearer sk-typed"]
    assert {h["Authorization"] for h in keyed.model_list_requests} == {"Bearer sk-typed"}
    assert fake_llm.requests == []


async def test_an_endpoint_that_is_down_is_one_clear_line(familiar_paths: FamiliarPaths, fake_llm: FakeLLM) -> None:
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {})
    down = "http://127.0.0.1:9/v1"
    try:
        with pytest.raises(FamiliarError) as raised:
            await familiar.setup.list_models(SettingsUpdate(llm_base_url=down))
    finally:
        await familiar.close()
    assert str(raised.value) == f"Cannot reach the LLM endpoint {down} (connection refused). Is the server running?"


async def test_saving_puts_everything_in_force_at_once(familiar_paths: FamiliarPaths, fake_llm: FakeLLM) -> None:
    familiar = await open_familiar(familiar_paths, "", {})
    try:
        view = await familiar.setup.save(
            SettingsUpdate(
                display_name=" Lantern ",
                bot_token="abc.def.ghi",
                llm_base_url=fake_llm.base_url,
                llm_model="test-model",
                llm_api_key="sk-new",
                background_model="cheap-model",
            )
        )
        status = familiar.get_status()
        await familiar.chat_local("hello")
    finally:
        await familiar.close()
    assert status.configured
    assert view.display_name == "Lantern"
    assert view.get("llm.background.model").value == "cheap-model"
    assert not view.background_follows_replies
    assert view.get("llm_api_key").source is SettingSource.SECRETS_FILE
    settings = tomllib.loads(familiar_paths.character_toml.read_text(encoding="utf-8"))
    assert settings["familiar"]["display_name"] == "Lantern"
    assert settings["llm"]["background"] == {"model": "cheap-model"}
    assert settings["llm"]["timeout"] == 5.0, "the other settings stay"
    (request,) = fake_llm.requests
    assert request.headers["Authorization"] == "Bearer sk-new"


@pytest.mark.parametrize(
    ("update", "says"),
    [
        (SettingsUpdate(display_name="  "), "Give the familiar a name."),
        (SettingsUpdate(display_name="two\nlines"), "The name must be one line of at most 100 characters."),
        (SettingsUpdate(llm_base_url="localhost:11434"), "must be a web address starting with http:// or https://"),
        (SettingsUpdate(llm_base_url="http://a b/v1"), "must be a web address"),
        (SettingsUpdate(background_base_url="ftp://x"), "The background endpoint must be a web address"),
        (SettingsUpdate(llm_model="x" * 201), "The model name must be one line"),
        (SettingsUpdate(bot_token="Bot abc"), "without the word 'Bot'"),
        (SettingsUpdate(llm_api_key="sk new"), "An API key is one line without spaces"),
    ],
)
async def test_a_bad_value_is_refused_and_changes_nothing(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM, update: SettingsUpdate, says: str
) -> None:
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {})
    before = familiar_paths.character_toml.read_bytes()
    mixed = dataclasses.replace(update, llm_api_key=update.llm_api_key or "sk-good")
    try:
        with pytest.raises(FamiliarError) as raised:
            await familiar.setup.save(mixed)
        view = await familiar.setup.current()
    finally:
        await familiar.close()
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)
    assert familiar_paths.character_toml.read_bytes() == before
    assert "llm_api_key" not in familiar_paths.secrets_file.read_text(encoding="utf-8"), "not even the good key"
    assert view.get("llm_api_key").source is SettingSource.DEFAULT


async def test_the_token_check_uses_the_saved_token_and_the_environment_one_first(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    SecretStore("default", familiar_paths.secrets_file, use_keyring=False).set("discord_token", TOKEN)
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {}, discord=fake_discord.api_base)
    try:
        saved = await familiar.setup.check_discord()
        typed = await familiar.setup.check_discord("MTIz.wrong")
    finally:
        await familiar.close()
    assert saved.verdict is TokenVerdict.OK
    assert saved.invite_url.endswith("client_id=1000&scope=bot&permissions=68608")
    assert typed.verdict is TokenVerdict.INVALID

    familiar = await open_familiar(
        familiar_paths, fake_llm.base_url, {"DISCORD_TOKEN": "MTIz.wrong"}, discord=fake_discord.api_base
    )
    try:
        overridden = await familiar.setup.check_discord(TOKEN)  # typed, but the environment's is used
    finally:
        await familiar.close()
    assert overridden.verdict is TokenVerdict.INVALID


async def test_a_card_becomes_this_familiar_keeping_its_settings_and_the_replaced_persona(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {})
    familiar_paths.character_md.write_text("You are a lighthouse keeper.\n", encoding="utf-8")
    card = SAMPLES / "rook_v3.json"
    try:
        preview = await familiar.setup.preview_card(card)
        applied = await familiar.setup.apply_card(card)
        await familiar.chat_local("Is the ferry safe?")
        with pytest.raises(FamiliarError, match=r"not valid JSON|not a card|neither"):
            await familiar.setup.preview_card(familiar_paths.character_md)
    finally:
        await familiar.close()

    assert (preview.name, preview.lore_entries, preview.has_greeting) == ("Captain Rook", 3, True)
    assert preview.source == "a Character Card V3 (JSON)"
    assert preview.description.startswith("Captain Rook ferries travellers")
    assert (applied.display_name, applied.lore_entries, applied.has_greeting) == ("Captain Rook", 3, True)
    (kept,) = applied.kept  # the hand-written persona; the template's lorebook is not worth keeping
    assert kept.name.startswith("character.md.before-card-")
    assert kept.read_text(encoding="utf-8") == "You are a lighthouse keeper.\n"
    settings = tomllib.loads(familiar_paths.character_toml.read_text(encoding="utf-8"))
    assert settings["familiar"] == {"display_name": "Captain Rook", "greeting": "Mind the gap, landlubber."}
    assert settings["llm"]["base_url"] == fake_llm.base_url, "the familiar's own settings stay"
    assert json.loads((familiar_paths.folder / "card.json").read_text(encoding="utf-8"))["data"]["name"] == (
        "Captain Rook"
    )
    (request,) = fake_llm.requests  # the persona and lore are in force at once
    prompt = "\n".join(str(m.get("content")) for m in request.messages)
    assert "Captain Rook ferries travellers between Saltmere and the outer isles." in prompt
    assert "lighthouse keeper" not in prompt


async def test_an_empty_value_in_character_toml_is_not_set(familiar_paths: FamiliarPaths) -> None:
    """`base_url = ""` in the file sets nothing: Settings says "not set", not "from character.toml"."""
    familiar = await open_familiar(familiar_paths, "", {})
    try:
        view = await familiar.setup.current()
    finally:
        await familiar.close()
    base_url = view.get("llm.base_url")
    assert (base_url.value, base_url.source, base_url.describe()) == ("", SettingSource.FILE, "not set")
    assert not base_url.is_set
    assert view.get("llm.model").describe() == "from character.toml", "a value in the file still says so"


async def test_a_start_refused_for_a_missing_endpoint_is_no_longer_the_last_error_once_one_is_saved(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    familiar = await open_familiar(familiar_paths, "", {"DISCORD_TOKEN": TOKEN})
    try:
        with pytest.raises(FamiliarError, match="No LLM endpoint yet"):
            await familiar.start()
        assert familiar.get_status().last_error == "No LLM endpoint yet: set them in Settings."

        await familiar.setup.save(SettingsUpdate(llm_model="another-model"))  # the endpoint is still missing
        assert familiar.get_status().last_error == "No LLM endpoint yet: set them in Settings."

        await familiar.setup.save(SettingsUpdate(llm_base_url=fake_llm.base_url))
        assert familiar.get_status().last_error is None, "what it lacked is there: the failure no longer holds"
    finally:
        await familiar.close()


async def test_the_settings_view_names_the_card_the_familiar_was_made_from(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    """So the welcome can take the card's name rather than ask it again."""
    familiar = await open_familiar(familiar_paths, fake_llm.base_url, {})
    try:
        before = await familiar.setup.current()
        await familiar.setup.apply_card(SAMPLES / "rook_v3.json")
        made = await familiar.setup.current()
        await familiar.setup.save(SettingsUpdate(display_name="Rook the Second"))
        renamed = await familiar.setup.current()
        (familiar_paths.folder / "card.json").write_text("not a card any more", encoding="utf-8")
        broken = await familiar.setup.current()
    finally:
        await familiar.close()
    assert (before.card_name, before.named_by_card) == ("", False)
    assert (made.card_name, made.display_name, made.named_by_card) == ("Captain Rook", "Captain Rook", True)
    assert (renamed.card_name, renamed.named_by_card) == ("Captain Rook", False), "renamed since: a name to choose"
    assert broken.card_name == ""
