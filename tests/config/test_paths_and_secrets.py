"""Data paths, the template copy, the file-backed secret store and round-trip TOML edits."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.config.editing import set_values
from app.config.errors import ConfigError
from app.config.paths import (
    FamiliarExistsError,
    FamiliarPaths,
    check_familiar_files,
    create_familiar,
    data_root,
    ensure_familiar,
    familiar_paths,
    list_familiars,
    require_familiar,
    secure_familiar,
    template_dir,
)
from app.config.secrets import SecretStore, SecretsUnavailableError
from app.config.settings import Settings, load_settings

# -- data root and names ---------------------------------------------------------------------------


def test_familiar_home_overrides_the_data_root(tmp_path: Path) -> None:
    assert data_root(env={"FAMILIAR_HOME": str(tmp_path)}) == tmp_path
    assert data_root(env={"FAMILIAR_HOME": f"  {tmp_path}  "}) == tmp_path


def test_familiar_home_expands_the_user_folder() -> None:
    assert data_root(env={"FAMILIAR_HOME": "~/fam"}) == Path("~/fam").expanduser()


def test_blank_familiar_home_uses_the_platform_folder() -> None:
    default = data_root(env={})
    assert default.is_absolute()
    assert data_root(env={"FAMILIAR_HOME": "   "}) == default
    assert "familiar" in default.as_posix().lower()


def test_familiar_paths_layout(tmp_path: Path) -> None:
    paths = familiar_paths("Wisp_2-b", env={"FAMILIAR_HOME": str(tmp_path)})
    assert paths.root == tmp_path
    assert paths.folder == tmp_path / "familiars" / "Wisp_2-b"
    assert paths.character_md == paths.folder / "character.md"
    assert paths.character_toml == paths.folder / "character.toml"
    assert paths.lorebook_toml == paths.folder / "lorebook.toml"
    assert paths.history_db == paths.folder / "history.db"
    assert paths.fts == paths.folder / "fts"
    assert paths.secrets_file.parent == tmp_path
    assert familiar_paths(env={"FAMILIAR_HOME": str(tmp_path)}).name == "default"
    assert not tmp_path.joinpath("familiars").exists(), "computing paths must not create folders"


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../escape",
        "a/b",
        "a\\b",
        "..",
        ".hidden",
        "-dash-first",
        "_underscore_first",
        "has space",
        "dot.name",
        "x" * 65,
        "naïve",
        "default\n",
        "tab\tname",
        "nul\x00",
    ],
)
def test_familiar_paths_rejects_bad_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        familiar_paths(name, env={"FAMILIAR_HOME": str(tmp_path)})
    assert "name" in caught.value.problem


@pytest.mark.parametrize("name", ["a", "default", "Wisp", "x" * 64, "9lives", "a-b_c"])
def test_familiar_paths_accepts_good_names(tmp_path: Path, name: str) -> None:
    assert familiar_paths(name, env={"FAMILIAR_HOME": str(tmp_path)}).name == name


# -- the template ------------------------------------------------------------------------------------


def test_ensure_familiar_copies_the_template(tmp_path: Path) -> None:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    assert ensure_familiar(paths) is True
    for filename in ("character.md", "character.toml", "lorebook.toml"):
        target = paths.folder / filename
        assert target.read_bytes() == (template_dir() / filename).read_bytes()
    assert isinstance(load_settings(paths.character_toml), Settings)
    tomllib.loads(paths.lorebook_toml.read_text(encoding="utf-8"))
    assert not list(paths.folder.glob("*.tmp")), "no temporary files are left behind"
    # A second call has nothing to do.
    assert ensure_familiar(paths) is False


def test_ensure_familiar_never_overwrites_the_owners_files(tmp_path: Path) -> None:
    paths = FamiliarPaths(root=tmp_path, name="mine")
    paths.folder.mkdir(parents=True)
    paths.character_md.write_text("# My own familiar\n", encoding="utf-8")
    paths.character_toml.write_text('[familiar]\ndisplay_name = "Mine"\n', encoding="utf-8")
    assert ensure_familiar(paths) is True  # lorebook.toml was missing
    assert paths.character_md.read_text(encoding="utf-8") == "# My own familiar\n"
    assert paths.character_toml.read_text(encoding="utf-8") == '[familiar]\ndisplay_name = "Mine"\n'
    assert paths.lorebook_toml.read_bytes() == (template_dir() / "lorebook.toml").read_bytes()

    paths.lorebook_toml.write_text("# emptied by the owner\n", encoding="utf-8")
    assert ensure_familiar(paths) is False
    assert paths.lorebook_toml.read_text(encoding="utf-8") == "# emptied by the owner\n"
    assert paths.character_md.read_text(encoding="utf-8") == "# My own familiar\n"


def test_ensure_familiar_keeps_even_an_empty_owner_file(tmp_path: Path) -> None:
    paths = FamiliarPaths(root=tmp_path, name="default")
    paths.folder.mkdir(parents=True)
    paths.character_md.write_bytes(b"")
    ensure_familiar(paths)
    assert paths.character_md.read_bytes() == b""


# -- secrets -----------------------------------------------------------------------------------------


def _store(tmp_path: Path, familiar: str = "default") -> SecretStore:
    return SecretStore(familiar, tmp_path / "home" / "secrets.toml", use_keyring=False)


def test_secret_store_round_trips_to_a_private_file(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert "file" in store.backend_name
    assert store.get("discord_token") == ""
    store.set("discord_token", "tok.en-123")
    store.set("llm_api_key", 'sk-"quoted"\\back\nslash')
    secrets_file = tmp_path / "home" / "secrets.toml"
    assert secrets_file.exists()
    if sys.platform != "win32":
        assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    # A fresh store (a new process) reads the same values back.
    again = _store(tmp_path)
    assert again.get("discord_token") == "tok.en-123"
    assert again.get("llm_api_key") == 'sk-"quoted"\\back\nslash'
    loaded = again.load(env={})
    assert loaded.discord_token == "tok.en-123"
    assert loaded.llm_api_key == 'sk-"quoted"\\back\nslash'
    assert not list(secrets_file.parent.glob("*.tmp"))


def test_secret_file_stays_private_after_rewrites(tmp_path: Path) -> None:
    store = _store(tmp_path)
    secrets_file = tmp_path / "home" / "secrets.toml"
    old_umask = os.umask(0o000)
    try:
        store.set("discord_token", "one")
        store.set("discord_token", "two")
    finally:
        os.umask(old_umask)
    if sys.platform != "win32":
        assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    assert _store(tmp_path).get("discord_token") == "two"


posix_only = pytest.mark.skipif(os.name != "posix", reason="owner-only modes are POSIX permissions")


@posix_only
def test_a_leftover_temporary_file_with_loose_permissions_does_not_loosen_the_secrets(tmp_path: Path) -> None:
    """Before, the write reopened the leftover secrets.tmp (keeping its 0644) and renamed it over
    secrets.toml: the bot token became readable by everyone."""
    store = _store(tmp_path)
    store.set("discord_token", "one")
    leftover = tmp_path / "home" / "secrets.tmp"
    leftover.write_text("stale", encoding="utf-8")
    leftover.chmod(0o644)
    store.set("discord_token", "two")
    secrets_file = tmp_path / "home" / "secrets.toml"
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    assert not leftover.exists()
    assert _store(tmp_path).get("discord_token") == "two"


@posix_only
def test_a_secrets_file_left_readable_by_others_is_made_private_when_read(tmp_path: Path) -> None:
    secrets_file = tmp_path / "home" / "secrets.toml"
    secrets_file.parent.mkdir()
    secrets_file.write_text('[default]\ndiscord_token = "tok"\n', encoding="utf-8")
    secrets_file.chmod(0o644)
    assert _store(tmp_path).get("discord_token") == "tok"
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600


def test_environment_wins_over_stored_secrets(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("discord_token", "stored-token")
    store.set("llm_api_key", "stored-key")
    loaded = store.load(env={"DISCORD_TOKEN": "env-token", "FAMILIAR_LLM_API_KEY": "env-key"})
    assert loaded.discord_token == "env-token"
    assert loaded.llm_api_key == "env-key"
    # Blank environment values do not hide the stored ones.
    loaded = store.load(env={"DISCORD_TOKEN": "  ", "FAMILIAR_LLM_API_KEY": ""})
    assert loaded.discord_token == "stored-token"
    assert loaded.llm_api_key == "stored-key"
    # Only one of them set.
    loaded = store.load(env={"FAMILIAR_LLM_API_KEY": "env-key"})
    assert (loaded.discord_token, loaded.llm_api_key) == ("stored-token", "env-key")


def test_the_background_key_is_its_own_secret(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("llm_api_key", "reply-key")
    assert store.load(env={}).llm_background_api_key == ""  # blank: the background work uses the reply key
    store.set("llm_background_api_key", "cheap-key")
    loaded = _store(tmp_path).load(env={})
    assert (loaded.llm_api_key, loaded.llm_background_api_key) == ("reply-key", "cheap-key")
    loaded = store.load(env={"FAMILIAR_LLM_BACKGROUND_API_KEY": "env-key"})
    assert (loaded.llm_api_key, loaded.llm_background_api_key) == ("reply-key", "env-key")


def test_environment_alone_without_a_file(tmp_path: Path) -> None:
    loaded = _store(tmp_path).load(env={"DISCORD_TOKEN": " padded "})
    assert loaded.discord_token == "padded"
    assert loaded.llm_api_key == ""
    assert not (tmp_path / "home" / "secrets.toml").exists()


def test_empty_value_deletes_the_secret(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("discord_token", "abc")
    store.set("llm_api_key", "key")
    store.set("discord_token", "")
    assert store.get("discord_token") == ""
    assert store.get("llm_api_key") == "key"
    text = (tmp_path / "home" / "secrets.toml").read_text(encoding="utf-8")
    assert "discord_token" not in text
    assert "abc" not in text


def test_familiars_keep_separate_secrets(tmp_path: Path) -> None:
    first = _store(tmp_path, "default")
    second = _store(tmp_path, "other-one")
    first.set("discord_token", "first-token")
    second.set("discord_token", "second-token")
    first.set("llm_api_key", "first-key")
    assert first.get("discord_token") == "first-token"
    assert second.get("discord_token") == "second-token"
    assert second.get("llm_api_key") == ""


def test_unknown_secret_names_are_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with pytest.raises(KeyError):
        store.get("password")
    with pytest.raises(KeyError):
        store.set("password", "x")


def test_unreadable_secrets_file_reads_as_empty_and_is_replaced(tmp_path: Path) -> None:
    secrets_file = tmp_path / "home" / "secrets.toml"
    secrets_file.parent.mkdir(parents=True)
    secrets_file.write_bytes(b"\xff\xfe not toml [[[")
    store = _store(tmp_path)
    assert store.get("discord_token") == ""
    store.set("discord_token", "fresh")
    assert _store(tmp_path).get("discord_token") == "fresh"


@settings(max_examples=100, deadline=None)
@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",)),
        min_size=1,
        max_size=40,
    )
)
def test_secret_values_round_trip(tmp_path_factory: pytest.TempPathFactory, value: str) -> None:
    folder = tmp_path_factory.mktemp("secrets")
    store = SecretStore("default", folder / "secrets.toml", use_keyring=False)
    store.set("llm_api_key", "other")
    store.set("discord_token", value)
    again = SecretStore("default", folder / "secrets.toml", use_keyring=False)
    assert again.get("discord_token") == value
    assert again.get("llm_api_key") == "other"


# -- round-trip edits of character.toml --------------------------------------------------------------

ORIGINAL = """# My familiar. Hand-edited; keep my notes!

[familiar]
display_name   =   "Wisp"      # aligned on purpose

[discord]
# channels I like
home_channels = [ 1,   2 ]   # spaced
allow_dms = true

[llm]
# Ollama on the desk
base_url = "http://127.0.0.1:11434/v1"
model = 'llama3.1'     # literal string
timeout = 60.0

[history]
recent_turns = 20
"""


def test_set_values_keeps_comments_and_formatting(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_text(ORIGINAL, encoding="utf-8")
    set_values(target, {"llm.base_url": "https://openrouter.ai/api/v1", "llm.model": "gpt-x"})
    text = target.read_text(encoding="utf-8")
    expected = ORIGINAL.replace('"http://127.0.0.1:11434/v1"', '"https://openrouter.ai/api/v1"').replace(
        "'llama3.1'", '"gpt-x"'
    )
    assert text == expected
    settings_after = load_settings(target)
    assert settings_after.llm.base_url == "https://openrouter.ai/api/v1"
    assert settings_after.llm.model == "gpt-x"
    assert settings_after.discord.home_channels == (1, 2)
    assert not list(tmp_path.glob("*.tmp"))


def test_set_values_creates_missing_tables(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_text('# only a comment\n[familiar]\ndisplay_name = "Wisp"\n', encoding="utf-8")
    set_values(target, {"llm.model": "m", "llm.background.model": "small"})
    text = target.read_text(encoding="utf-8")
    assert text.startswith('# only a comment\n[familiar]\ndisplay_name = "Wisp"\n')
    settings_after = load_settings(target)
    assert settings_after.llm.model == "m"
    assert settings_after.llm.background.model == "small"


def test_set_values_into_inline_and_dotted_tables(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_text('llm = { model = "a", timeout = 30.0 }  # inline\n', encoding="utf-8")
    set_values(target, {"llm.model": "b"})
    assert load_settings(target).llm.model == "b"
    assert load_settings(target).llm.timeout == 30.0
    assert "# inline" in target.read_text(encoding="utf-8")
    set_values(target, {"llm.background.model": "small"})
    assert load_settings(target).llm.background.model == "small"
    assert load_settings(target).llm.model == "b"

    target.write_text('llm.model = "a"\n', encoding="utf-8")
    set_values(target, {"llm.model": "c"})
    assert load_settings(target).llm.model == "c"


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"llm.timeout": "not a number"}, "llm.timeout"),
        ({"familiar.nickname": "x"}, "familiar.nickname"),
        ({"nosuch.table": "x"}, "nosuch"),
        ({"llm.model": "ok", "history.recent_turns": "20"}, "history.recent_turns"),
        ({"discord.home_channels": "1,2"}, "discord.home_channels"),
    ],
)
def test_set_values_refuses_an_invalid_result(tmp_path: Path, values: dict[str, str], key: str) -> None:
    target = tmp_path / "character.toml"
    target.write_text(ORIGINAL, encoding="utf-8")
    before = target.read_bytes()
    with pytest.raises(ConfigError) as caught:
        set_values(target, values)
    assert caught.value.key == key
    assert caught.value.path == target
    assert target.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp"))


def test_set_values_through_a_scalar_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_text('[familiar]\ndisplay_name = "Wisp"\n', encoding="utf-8")
    before = target.read_bytes()
    with pytest.raises(ConfigError) as caught:
        set_values(target, {"familiar.display_name.first": "x"})
    assert caught.value.key == "familiar.display_name.first"
    assert target.read_bytes() == before


def test_set_values_on_invalid_toml_names_the_line(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_text('[llm]\nmodel = "a"\nbroken = \n', encoding="utf-8")
    before = target.read_bytes()
    with pytest.raises(ConfigError) as caught:
        set_values(target, {"llm.model": "b"})
    assert caught.value.line == 3
    assert "not valid TOML" in caught.value.problem
    assert target.read_bytes() == before


# -- listing, requiring and creating familiars --------------------------------------------------------


def test_list_familiars_names_folders_with_valid_names_only(tmp_path: Path) -> None:
    assert list_familiars(tmp_path / "nowhere") == []
    folder = tmp_path / "familiars"
    for name in ("wisp", "Rook", ".new-half-built", "not a name"):
        (folder / name).mkdir(parents=True)
    (folder / "stray.txt").write_text("x", encoding="utf-8")
    assert list_familiars(tmp_path) == ["Rook", "wisp"]


def test_require_familiar_lists_the_familiars_there_are(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        require_familiar(FamiliarPaths(tmp_path, "default"))
    assert "no familiar named 'default' (there are no familiars here yet)" in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "familiars"))
    create_familiar(FamiliarPaths(tmp_path, "wisp"))
    create_familiar(FamiliarPaths(tmp_path, "Rook"))
    with pytest.raises(ConfigError) as caught:
        require_familiar(FamiliarPaths(tmp_path, "wsp"))
    assert "no familiar named 'wsp' (the familiars here are: Rook, wisp); create it with `familiar new wsp`" in str(
        caught.value
    )
    require_familiar(FamiliarPaths(tmp_path, "wisp"))
    assert not (tmp_path / "familiars" / "wsp").exists(), "asking never creates"


def test_create_familiar_copies_the_template_and_never_overwrites(tmp_path: Path) -> None:
    paths = FamiliarPaths(tmp_path, "wisp")
    create_familiar(paths)
    for filename in ("character.md", "character.toml", "lorebook.toml"):
        assert (paths.folder / filename).read_bytes() == (template_dir() / filename).read_bytes()
    paths.character_md.write_text("mine\n", encoding="utf-8")
    with pytest.raises(FamiliarExistsError, match="a familiar named 'wisp' already exists"):
        create_familiar(paths)
    assert paths.character_md.read_text(encoding="utf-8") == "mine\n"
    with pytest.raises(ConfigError, match="a familiar's name may use"):
        create_familiar(FamiliarPaths(tmp_path, "../escape"))
    assert sorted(p.name for p in (tmp_path / "familiars").iterdir()) == ["wisp"]


def test_a_failed_creation_leaves_no_half_made_familiar(tmp_path: Path) -> None:
    def fill(folder: Path) -> None:
        (folder / "character.md").write_text("half", encoding="utf-8")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        create_familiar(FamiliarPaths(tmp_path, "wisp"), fill)
    assert list((tmp_path / "familiars").iterdir()) == []


def test_create_familiar_lets_fill_write_its_own_files(tmp_path: Path) -> None:
    paths = FamiliarPaths(tmp_path, "rook")
    create_familiar(paths, lambda folder: (folder / "character.md").write_text("# Rook\n", encoding="utf-8"))
    assert paths.character_md.read_text(encoding="utf-8") == "# Rook\n"
    assert paths.character_toml.is_file()


def test_a_strict_read_tells_an_unreadable_secrets_file_from_a_missing_secret(tmp_path: Path) -> None:
    """`read` (for the tombstone key) raises where `get` answers "": a key taken for lost would be replaced."""
    store = _store(tmp_path)
    assert store.read("tombstone_key") == ""  # no file yet: simply none
    store.set("tombstone_key", "ab" * 32)
    assert store.read("tombstone_key") == "ab" * 32
    assert store.for_familiar("other").read("tombstone_key") == ""
    (tmp_path / "home" / "secrets.toml").write_text("[default\n", encoding="utf-8")
    assert store.get("discord_token") == ""
    with pytest.raises(SecretsUnavailableError, match=r"secrets\.toml cannot be read"):
        store.read("tombstone_key")


def test_checking_the_familiar_s_files_keeps_the_database_s_locks(tmp_path: Path) -> None:
    """The checks run again at every settings save while the store is open: asking whether history.db can
    be used must not open and close it (that drops this process's SQLite locks; issue 18)."""
    paths = FamiliarPaths(root=tmp_path, name="default")
    create_familiar(paths)
    conn = sqlite3.connect(paths.history_db)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        secure_familiar(paths)
        check_familiar_files(paths)
        other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT * FROM t'); c.close()"
        subprocess.run([sys.executable, "-c", other, str(paths.history_db)], check=True, timeout=60)
        assert paths.history_db.with_name("history.db-wal").exists()
    finally:
        conn.close()
