"""Advice naming a setting: the window says "in Settings", a terminal names character.toml or the environment.

Issue 20 item 8: the runtime wrote its advice in the window's words and the headless mode rewrote them with a
table of regexes. The runtime now builds the advice from the settings it names (app/runtime/hints.py), and
each front end words it; no runtime text says "in Settings" or "press Start" by itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.runtime.errors import FamiliarError, LLMError
from app.runtime.hints import (
    LLM_API_KEY,
    LLM_BASE_URL,
    LLM_MAX_CONCURRENCY,
    LLM_MODEL,
    RESTART,
    Advice,
    Hint,
    missing_setup,
    terminal_text,
)
from app.runtime.llm import LLMClient, LLMEndpoint

REPO = Path(__file__).resolve().parents[2]
TOML = Path("/home/me/familiars/default/character.toml")


def _window_words_in_runtime() -> list[str]:
    """String constants of app/runtime (but hints.py, where the window's words live) naming the window's
    Settings dialog or Start button."""
    found = []
    for source in sorted((REPO / "app" / "runtime").rglob("*.py")):
        if source.name == "hints.py":
            continue
        tree = ast.parse(source.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if id(node) not in docstrings and ("in Settings" in text or "press Start" in text):
                found.append(f"{source.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    return found


def test_no_runtime_text_words_its_advice_for_the_window() -> None:
    assert _window_words_in_runtime() == []


def test_each_front_end_words_the_same_advice() -> None:
    token = missing_setup(("bot token", "LLM endpoint"))
    assert token == "No bot token yet: paste it in Settings, or set DISCORD_TOKEN."
    assert token.terminal(TOML) == "No bot token yet: set the DISCORD_TOKEN environment variable."
    model = missing_setup(("LLM model",))
    assert model == "No LLM model yet: set them in Settings."
    assert model.terminal(TOML) == f"No LLM model yet: set [llm] model in {TOML} (or FAMILIAR_LLM_MODEL)."
    both = Advice("", Hint("set {} first", (LLM_BASE_URL, LLM_MODEL)))
    assert both == "Set the LLM endpoint and the LLM model in Settings first."
    assert both.terminal(TOML) == (
        f"Set [llm] base_url in {TOML} (or FAMILIAR_LLM_BASE_URL) and [llm] model in {TOML} (or FAMILIAR_LLM_MODEL)"
        " first."
    )
    key = Advice(
        "The LLM endpoint http://x/v1 rejected the API key (401).", Hint("check {}", (LLM_API_KEY,), "the key")
    )
    assert key == "The LLM endpoint http://x/v1 rejected the API key (401). Check the key in Settings."
    assert key.terminal(TOML) == (
        "The LLM endpoint http://x/v1 rejected the API key (401). Check the FAMILIAR_LLM_API_KEY environment"
        " variable (or the key saved in the keyring)."
    )
    again = Advice("Switch on 'Message Content Intent',", RESTART)
    assert again == "Switch on 'Message Content Intent', then press Start again."
    assert again.terminal(TOML) == "Switch on 'Message Content Intent', then start the familiar again."
    said = Advice("Rate limited (429). Wait a moment or", Hint("lower {}", (LLM_MAX_CONCURRENCY,)), " It said: no")
    assert said == "Rate limited (429). Wait a moment or lower max_concurrency in Settings. It said: no"
    assert (
        said.terminal(TOML)
        == f"Rate limited (429). Wait a moment or lower [llm] max_concurrency in {TOML}. It said: no"
    )


def test_the_advice_survives_an_error_and_a_plain_text_stays_as_it_is() -> None:
    error = FamiliarError(missing_setup(("LLM endpoint",)))
    message = str(error)
    assert message == "No LLM endpoint yet: set them in Settings."
    assert (
        terminal_text(message, TOML) == f"No LLM endpoint yet: set [llm] base_url in {TOML} (or FAMILIAR_LLM_BASE_URL)."
    )
    assert terminal_text("Is the server running?", TOML) == "Is the server running?"
    assert str(FamiliarError("plain")) == "plain"


@pytest.mark.asyncio
async def test_the_llm_client_names_the_settings_it_misses() -> None:
    client = LLMClient(LLMEndpoint("", "", "", 5.0, 0, 1, 0.7, 100))
    with pytest.raises(LLMError) as refused:
        await client.complete([{"role": "user", "content": "hi"}])
    assert str(refused.value) == "Set the LLM endpoint and the LLM model in Settings first."
    assert terminal_text(str(refused.value), TOML).startswith(f"Set [llm] base_url in {TOML}")
