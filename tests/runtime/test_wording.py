"""Headless mode's wording of the runtime's advice: character.toml and environment variables, not Settings."""

from __future__ import annotations

import re
from pathlib import Path

from app.runtime.wording import for_terminal

REPO = Path(__file__).resolve().parents[2]
TOML = Path("/home/me/familiars/default/character.toml")
# A sentence of runtime source that sends the user to the window's Settings or Start button.
_WINDOW_ADVICE = re.compile(r"[^\"'.]*(?:\bin Settings\b|press Start)[^\"']*")


def _window_phrases() -> list[str]:
    found: list[str] = []
    for source in sorted((REPO / "app" / "runtime").rglob("*.py")):
        if source.name == "wording.py":
            continue
        found += [m.group().strip() for m in _WINDOW_ADVICE.finditer(source.read_text(encoding="utf-8"))]
    return found


def test_every_window_phrase_of_the_runtime_has_a_terminal_wording() -> None:
    phrases = _window_phrases()
    assert len(phrases) >= 12  # the scan finds them (the LLM client, the service, the Discord adapter)
    for phrase in phrases:
        if "{" in phrase:  # an f-string: try it as the runtime fills it in
            for filled in (
                re.sub(r"\{[^}]*\}", "LLM endpoint", phrase),
                re.sub(r"\{[^}]*\}", "LLM model", phrase),
                re.sub(r"\{[^}]*\}", "LLM endpoint and no LLM model", phrase),
            ):
                assert "Settings" not in for_terminal(filled, TOML), filled
        else:
            worded = for_terminal(phrase, TOML)
            assert "Settings" not in worded, phrase
            assert "press Start" not in worded, phrase


def test_specific_wordings() -> None:
    assert for_terminal("No bot token yet: paste it in Settings, or set DISCORD_TOKEN.", TOML) == (
        "No bot token yet: set the DISCORD_TOKEN environment variable."
    )
    assert for_terminal(
        "The LLM endpoint http://x/v1 rejected the API key (401). Check the key in Settings.", TOML
    ) == (
        "The LLM endpoint http://x/v1 rejected the API key (401). Check the FAMILIAR_LLM_API_KEY environment"
        " variable (or the key saved in the keyring)."
    )
    assert for_terminal("No LLM model yet: set them in Settings.", TOML) == (
        f"No LLM model yet: set [llm] model in {TOML} (or FAMILIAR_LLM_MODEL)."
    )
    assert (
        for_terminal("Something new in Settings.", TOML)
        == f"Something new in {TOML} or the environment (see the README)."
    )
    assert for_terminal("Nothing to reword.", TOML) == "Nothing to reword."
