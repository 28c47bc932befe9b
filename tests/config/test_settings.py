"""character.toml: the strict typed loader, its error messages and the environment overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.config.errors import ConfigError
from app.config.paths import template_dir
from app.config.settings import (
    Settings,
    apply_environment,
    iter_options,
    load_settings,
    parse_settings,
)

PATH = Path("/somewhere/familiars/default/character.toml")


def parse_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_settings(text, PATH)
    return caught.value


# -- the shipped template ------------------------------------------------------------------------


def test_shipped_template_parses() -> None:
    source = template_dir() / "character.toml"
    settings = parse_settings(source.read_text(encoding="utf-8"), source)
    assert isinstance(settings, Settings)
    assert settings.familiar.display_name == "Wisp"
    assert settings.discord.home_channels == ()
    assert settings.discord.allow_dms is True
    assert settings.llm.timeout == 60.0
    assert settings.llm.max_retries == 2
    assert settings.history.recent_turns == 20


def test_load_settings_reads_the_template(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_bytes((template_dir() / "character.toml").read_bytes())
    assert load_settings(target) == parse_settings(target.read_text(encoding="utf-8"), target)


def test_empty_file_gives_defaults() -> None:
    assert parse_settings("", PATH) == Settings()


def test_a_reply_is_retried_for_two_minutes_by_default() -> None:
    assert Settings().discord.send_retry_seconds == 120.0
    assert parse_settings("[discord]\nsend_retry_seconds = 0\n", PATH).discord.send_retry_seconds == 0.0


def test_the_greeting_is_text_and_blank_by_default() -> None:
    assert parse_settings("", PATH).familiar.greeting == ""
    text = '[familiar]\ngreeting = """\n*waves*\n\nHello, "traveller".\n"""\n'
    assert parse_settings(text, PATH).familiar.greeting == '*waves*\n\nHello, "traveller".\n'
    error = parse_error("[familiar]\ngreeting = 3\n")
    assert (error.line, error.key) == (2, "familiar.greeting")
    assert "expected a string" in error.problem


def test_values_are_typed() -> None:
    settings = parse_settings(
        """
[discord]
home_channels = [1, 22, 333]
guild_ready_timeout = 1   # an integer is fine for a float option

[llm]
timeout = 30
temperature = 0.5

[llm.background]
model = "small"
""",
        PATH,
    )
    assert settings.discord.home_channels == (1, 22, 333)
    assert isinstance(settings.discord.guild_ready_timeout, float)
    assert isinstance(settings.llm.timeout, float)
    assert settings.llm.timeout == 30.0
    assert settings.llm.background.model == "small"
    assert settings.llm.background.base_url == ""


# -- unknown keys --------------------------------------------------------------------------------


def test_unknown_top_level_key_names_file_line_and_key() -> None:
    error = parse_error('[familiar]\ndisplay_name = "Wisp"\n\nbogus_option = 3\n')
    # `bogus_option` follows [familiar], so it is familiar.bogus_option.
    assert error.key == "familiar.bogus_option"
    assert error.line == 4
    assert error.path == PATH
    assert str(PATH) in str(error)
    assert "line 4" in str(error)
    assert "familiar.bogus_option" in str(error)
    assert "unknown key" in str(error)


def test_unknown_table_is_an_error() -> None:
    error = parse_error('# comment\n\n[familiar]\ndisplay_name = "x"\n\n[memroy]\nsize = 1\n')
    assert error.key == "memroy"
    assert error.line == 6
    assert "unknown key" in error.problem
    # The message lists the keys that exist at that level.
    assert "familiar" in error.problem
    assert "history" in error.problem


def test_unknown_root_key_before_any_table() -> None:
    error = parse_error('colour = "blue"\n[familiar]\n')
    assert error.key == "colour"
    assert error.line == 1


def test_unknown_nested_key() -> None:
    error = parse_error("[discord]\nallow_dms = true\nallow_dm = false\n")
    assert error.key == "discord.allow_dm"
    assert error.line == 3
    assert "allow_dms" in error.problem  # the known keys help spot the typo


def test_unknown_key_in_llm_background() -> None:
    text = '[llm]\nmodel = "big"\n\n[llm.background]\nmodel = "small"\ntemprature = 0.2\n'
    error = parse_error(text)
    assert error.key == "llm.background.temprature"
    assert error.line == 6
    assert "llm.background.temprature" in str(error)
    assert "line 6" in str(error)


def test_unknown_key_in_dotted_form() -> None:
    error = parse_error('[llm]\nbackground.modle = "x"\n')
    assert error.key == "llm.background.modle"
    assert error.line == 2


# -- wrong types and ranges ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "line", "words"),
    [
        ('[llm]\nmodel = "m"\ntimeout = "60"\n', "llm.timeout", 3, "expected a number"),
        ('[llm]\nmax_retries = "2"\n', "llm.max_retries", 2, "expected a whole number"),
        ("[llm]\nmax_retries = true\n", "llm.max_retries", 2, "got bool"),
        ("[history]\nrecent_turns = false\n", "history.recent_turns", 2, "got bool"),
        ("[llm]\ntemperature = true\n", "llm.temperature", 2, "got bool"),
        ("[llm]\nmax_tokens = 12.5\n", "llm.max_tokens", 2, "expected a whole number"),
        ('[discord]\n\nhome_channels = ["123", "456"]\n', "discord.home_channels", 3, "expected a whole number"),
        ("[discord]\nhome_channels = 123\n", "discord.home_channels", 2, "expected a list"),
        ('[discord]\nallow_dms = "yes"\n', "discord.allow_dms", 2, "expected true or false"),
        ("[discord]\nallow_dms = 1\n", "discord.allow_dms", 2, "expected true or false"),
        ('[discord]\nsend_retry_seconds = "2 minutes"\n', "discord.send_retry_seconds", 2, "expected a number"),
        ("[familiar]\ndisplay_name = 7\n", "familiar.display_name", 2, "expected a string"),
        ("[llm]\nbase_url = 1979-05-27\n", "llm.base_url", 2, "expected a string"),
        ("[llm]\nbackground = 3\n", "llm.background", 2, "expected a table"),
        ('discord = "on"\n', "discord", 1, "expected a table"),
    ],
)
def test_wrong_types_name_line_and_key(text: str, key: str, line: int, words: str) -> None:
    error = parse_error(text)
    assert error.key == key
    assert error.line == line
    assert words in error.problem
    assert f"line {line}" in str(error)
    assert f"'{key}'" in str(error)


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("[llm]\ntemperature = 2.5\n", "llm.temperature", 2),
        ("[llm]\ntemperature = -0.1\n", "llm.temperature", 2),
        ("[llm]\nmax_concurrency = 0\n", "llm.max_concurrency", 2),
        ("[llm]\nmax_retries = 11\n", "llm.max_retries", 2),
        ("[llm]\n\ntimeout = 0.5\n", "llm.timeout", 3),
        ("[llm]\ntimeout = inf\n", "llm.timeout", 2),
        ("[llm]\ntimeout = nan\n", "llm.timeout", 2),
        ("[llm]\nmax_tokens = 0\n", "llm.max_tokens", 2),
        ("[history]\nrecent_turns = -1\n", "history.recent_turns", 2),
        ("[history]\nrecent_turns = 501\n", "history.recent_turns", 2),
        ("[discord]\nguild_ready_timeout = 61\n", "discord.guild_ready_timeout", 2),
        ("[discord]\nsend_retry_seconds = -1\n", "discord.send_retry_seconds", 2),
        ("[discord]\nsend_retry_seconds = 3601\n", "discord.send_retry_seconds", 2),
        ("[discord]\nsend_retry_seconds = nan\n", "discord.send_retry_seconds", 2),
        # Huge integers for float options are out of range, not a crash.
        ("[llm]\ntimeout = 1" + "0" * 400 + "\n", "llm.timeout", 2),
        ("[llm]\nmax_retries = 1" + "0" * 400 + "\n", "llm.max_retries", 2),
    ],
)
def test_out_of_range_values(text: str, key: str, line: int) -> None:
    error = parse_error(text)
    assert error.key == key
    assert error.line == line
    assert "out of range" in error.problem or "too large" in error.problem


def test_range_bounds_are_inclusive() -> None:
    settings = parse_settings(
        "[llm]\ntemperature = 2.0\nmax_concurrency = 1\nmax_retries = 0\n[history]\nrecent_turns = 500\n", PATH
    )
    assert settings.llm.temperature == 2.0
    assert settings.history.recent_turns == 500


# -- invalid TOML and encodings --------------------------------------------------------------------


def test_invalid_toml_gives_the_line() -> None:
    error = parse_error('[familiar]\ndisplay_name = "Wisp"\n\n[llm]\nmodel = "unterminated\n')
    assert error.line == 5
    assert error.key is None
    assert "not valid TOML" in error.problem
    assert "line 5" in str(error)


def test_duplicate_key_is_invalid_toml() -> None:
    error = parse_error('[llm]\nmodel = "a"\nmodel = "b"\n')
    assert error.line == 3
    assert "not valid TOML" in error.problem


def test_deeply_nested_value_is_a_config_error() -> None:
    error = parse_error("[llm]\nmodel = " + "[" * 5000 + "]" * 5000 + "\n")
    assert error.path == PATH


def test_invalid_utf8_gives_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_bytes(b'[familiar]\ndisplay_name = "W\xffisp"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(target)
    assert caught.value.path == target
    assert caught.value.line == 2
    assert "UTF-8" in caught.value.problem
    assert str(target) in str(caught.value)


def test_load_settings_on_a_missing_file(tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "character.toml"
    with pytest.raises(ConfigError) as caught:
        load_settings(target)
    assert caught.value.path == target
    assert "not found" in caught.value.problem
    assert not target.parent.exists(), "loading must not create anything"


def test_load_settings_reports_errors_with_the_real_path(tmp_path: Path) -> None:
    target = tmp_path / "character.toml"
    target.write_text("[llm]\nmax_retries = 99\n", encoding="utf-8")
    before = target.read_bytes()
    with pytest.raises(ConfigError) as caught:
        load_settings(target)
    assert caught.value.path == target
    assert caught.value.line == 2
    assert target.read_bytes() == before


# -- environment overrides -------------------------------------------------------------------------


def test_apply_environment_overrides() -> None:
    base = parse_settings(
        '[discord]\napi_base = "http://file"\n[llm]\nbase_url = "http://file-llm"\nmodel = "file-model"\n', PATH
    )
    env = {
        "FAMILIAR_DISCORD_API_BASE": "http://127.0.0.1:1/api",
        "FAMILIAR_DISCORD_GATEWAY_URL": "ws://127.0.0.1:1/gw",
        "FAMILIAR_LLM_BASE_URL": "http://127.0.0.1:2/v1",
        "FAMILIAR_LLM_MODEL": "env-model",
    }
    applied = apply_environment(base, env)
    assert applied.discord.api_base == "http://127.0.0.1:1/api"
    assert applied.discord.gateway_url == "ws://127.0.0.1:1/gw"
    assert applied.llm.base_url == "http://127.0.0.1:2/v1"
    assert applied.llm.model == "env-model"
    # Everything else is untouched, and the input is not mutated.
    assert applied.llm.timeout == base.llm.timeout
    assert applied.familiar == base.familiar
    assert base.llm.model == "file-model"


def test_apply_environment_ignores_empty_and_unrelated_values() -> None:
    base = parse_settings('[llm]\nmodel = "file-model"\n', PATH)
    applied = apply_environment(base, {"FAMILIAR_LLM_MODEL": "", "DISCORD_TOKEN": "t", "FAMILIAR_HOME": "/x"})
    assert applied == base


def test_apply_environment_each_variable_alone() -> None:
    base = Settings()
    assert apply_environment(base, {"FAMILIAR_DISCORD_API_BASE": "a"}).discord.api_base == "a"
    assert apply_environment(base, {"FAMILIAR_DISCORD_GATEWAY_URL": "g"}).discord.gateway_url == "g"
    assert apply_environment(base, {"FAMILIAR_LLM_BASE_URL": "b"}).llm.base_url == "b"
    assert apply_environment(base, {"FAMILIAR_LLM_MODEL": "m"}).llm.model == "m"


def test_apply_environment_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAMILIAR_LLM_MODEL", "from-os")
    assert apply_environment(Settings()).llm.model == "from-os"


# -- documentation -------------------------------------------------------------------------------


def test_every_option_is_documented() -> None:
    options = iter_options()
    names = [name for name, _doc in options]
    assert len(names) == len(set(names))
    for expected in ("llm.background.model", "discord.home_channels", "history.recent_turns", "familiar"):
        assert expected in names
    undocumented = [name for name, doc in options if not doc.strip()]
    assert undocumented == []


# -- property: nothing but Settings or ConfigError -------------------------------------------------

_KEYS = st.sampled_from(
    [
        "display_name",
        "home_channels",
        "allow_dms",
        "timeout",
        "max_retries",
        "temperature",
        "max_tokens",
        "recent_turns",
        "guild_ready_timeout",
        "model",
        "base_url",
        "background",
        "familiar",
        "discord",
        "llm",
        "history",
        "bogus",
        "llm.background.model",
        "background.base_url",
        '"quoted key"',
    ]
)
_TABLES = st.sampled_from(
    ["[familiar]", "[discord]", "[llm]", "[llm.background]", "[history]", "[nope]", "[[llm]]", "[llm", "[]", "[a.b.c]"]
)
_SCALARS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["1" + "0" * 400, "-" + "9" * 400, "inf", "-inf", "nan", "1e400", "0x10", "1_000", "0o7"]),
    st.floats(allow_nan=True, allow_infinity=False).map(repr),
    st.booleans().map(lambda b: str(b).lower()),
    st.text(max_size=12).map(lambda s: '"' + s.replace("\\", "").replace('"', "") + '"'),
    st.sampled_from(["1979-05-27", "07:32:00", "1979-05-27T07:32:00Z", "'literal'", '"""multi"""', "[", "{", "}"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(_KEYS, inner), max_size=3).map(
            lambda kvs: "{" + ", ".join(f"{k} = {v}" for k, v in kvs) + "}"
        ),
    ),
    max_leaves=8,
)
_LINES = st.one_of(
    _TABLES,
    st.tuples(_KEYS, _VALUES).map(lambda kv: f"{kv[0]} = {kv[1]}"),
    st.text(max_size=30),
    st.just("# a comment"),
    st.just(""),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINES, max_size=12).map("\n".join))
def test_parse_settings_never_raises_anything_else(text: str) -> None:
    outcome: Settings | ConfigError
    try:
        outcome = parse_settings(text, PATH)
    except ConfigError as error:
        outcome = error
    if isinstance(outcome, ConfigError):
        assert outcome.path == PATH
        assert str(outcome).startswith(str(PATH))
        assert outcome.line is None or outcome.line >= 1
    else:
        assert isinstance(outcome, Settings)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_load_settings_on_random_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    target = tmp_path_factory.mktemp("bytes") / "character.toml"
    target.write_bytes(data)
    outcome: Settings | ConfigError
    try:
        outcome = load_settings(target)
    except ConfigError as error:
        outcome = error
    if isinstance(outcome, ConfigError):
        assert outcome.path == target
    else:
        assert isinstance(outcome, Settings)
