"""The runtime's messages as a terminal user reads them.

The runtime words its advice for the window ("Check the key in Settings", "press Start again"). Headless mode
and the commands have no Settings dialog and no Start button: there, the same advice names the setting in
character.toml or the environment variable that changes it. `for_terminal` rewrites one message; every
window-only phrase the runtime uses has its terminal wording here (tests/test_wording.py finds each
"in Settings" in app/runtime and checks it is rewritten).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

_URL = "[llm] base_url in {toml} (or FAMILIAR_LLM_BASE_URL)"
_MODEL = "[llm] model in {toml} (or FAMILIAR_LLM_MODEL)"
_KEY = "the FAMILIAR_LLM_API_KEY environment variable (or the key saved in the keyring)"

# (window wording, terminal wording); {toml} is the familiar's character.toml.
_PHRASES: tuple[tuple[str, str], ...] = (
    (
        r"No bot token yet: paste it in Settings, or set DISCORD_TOKEN\.",
        "No bot token yet: set the DISCORD_TOKEN environment variable.",
    ),
    (
        r"No LLM endpoint and no LLM model yet: set them in Settings\.",
        f"No LLM endpoint and model yet: set {_URL} and {_MODEL}.",
    ),
    (r"No LLM endpoint yet: set them in Settings\.", f"No LLM endpoint yet: set {_URL}."),
    (r"No LLM model yet: set them in Settings\.", f"No LLM model yet: set {_MODEL}."),
    (r"Set the LLM endpoint and the LLM model in Settings first\.", f"Set {_URL} and {_MODEL} first."),
    (r"Set the LLM endpoint in Settings first\.", f"Set {_URL} first."),
    (r"Set the LLM model in Settings first\.", f"Set {_MODEL} first."),
    (r"Raise max_tokens in Settings\.", "Raise [llm] max_tokens in {toml}."),
    (r"Check the key in Settings\.", f"Check {_KEY}."),
    (r"Check the API key and its permissions in Settings\.", f"Check {_KEY} and its permissions."),
    (r"Check the model name in Settings\.", f"Check {_MODEL}."),
    (r"Check the URL in Settings \(it usually ends in /v1\)\.", f"Check {_URL}; it usually ends in /v1."),
    (r"Raise the timeout in Settings if it is just slow\.", "Raise [llm] timeout in {toml} if it is just slow."),
    (r"Check the address in Settings\.", f"Check {_URL}."),
    (r"Check https:// versus http:// in Settings\.", f"Check https:// versus http:// in {_URL}."),
    (r"lower max_concurrency in Settings\.", "lower [llm] max_concurrency in {toml}."),
    (r"then press Start again\.", "then start the familiar again."),
)
_COMPILED = tuple((re.compile(pattern), replacement) for pattern, replacement in _PHRASES)
_LEFT = re.compile(r"\bin Settings\b")


def for_terminal(message: str, character_toml: Path) -> str:
    """`message` with its window-only advice worded for a terminal (character.toml, environment variables)."""
    toml = str(character_toml)
    for pattern, replacement in _COMPILED:
        message = pattern.sub(_literal(replacement.format(toml=toml)), message)
    # A phrase added later without a wording here still points somewhere that exists.
    return _LEFT.sub(_literal(f"in {toml} or the environment (see the README)"), message)


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement taken as it is (a Windows path's backslashes are not group references)."""
    return lambda _match: text
