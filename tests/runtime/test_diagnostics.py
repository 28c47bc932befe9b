"""Copy diagnostics: versions, settings without secrets, index status, the last errors; never a token or a key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.diagnostics import clean_url, settings_lines, versions
from app.runtime.events import FailureReported
from app.runtime.service import Familiar

TOKEN = "tok-SECRET-abc123"
KEY = "sk-SECRET-xyz789"
URL_PASSWORD = "pw-SECRET-9"
URL_KEY = "q-SECRET-77"


@pytest.mark.asyncio
async def test_diagnostics_carry_what_a_bug_report_needs_and_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("FAMILIAR_HOME", str(home))
    logs = home / "logs"
    logs.mkdir(parents=True)
    (logs / "familiar.log").write_text(
        f"2025-01-01 10:00:00,000 1 INFO familiar: connection: connecting\n"
        f"2025-01-01 10:00:01,000 1 WARNING app.runtime.llm: the endpoint said {KEY} is wrong\n"
        f"2025-01-01 10:00:02,000 1 ERROR familiar: login with {TOKEN} failed\n",
        encoding="utf-8",
    )
    env = {
        "DISCORD_TOKEN": TOKEN,
        "FAMILIAR_LLM_API_KEY": KEY,
        "FAMILIAR_LLM_BASE_URL": f"https://me:{URL_PASSWORD}@llm.example:8443/v1?key={URL_KEY}",
        "FAMILIAR_LLM_MODEL": "tiny",
    }
    paths = FamiliarPaths(root=home, name="default")
    familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env=env)
    try:
        familiar.publish(FailureReported(f"The LLM endpoint rejected the API key {KEY} (401)."))
        text = await familiar.diagnostics({"Qt": "6.11.3"})
    finally:
        await familiar.close()

    assert "SECRET" not in text, text
    assert "Familiar diagnostics for 'default'" in text
    for name in ("Familiar", "Python", "PySide6", "discord.py", "openai", "tantivy", "Qt"):
        assert f"  {name}: " in text, name
    assert "llm.base_url = 'https://llm.example:8443/v1?[redacted]'" in text
    assert "llm.model = 'tiny'" in text
    assert "discord token: set" in text
    assert "turns: " in text  # the index status
    assert "ERROR familiar: login with [redacted] failed" in text  # the last errors, from the log file
    assert "The LLM endpoint rejected the API key [redacted] (401)." in text
    assert "connection: connecting" not in text  # INFO lines are not errors


@dataclass
class Section:
    api_key: str = "sk-1"
    max_tokens: int = 600
    base_url: str = "http://127.0.0.1:11434/v1"


def test_settings_lines_leave_out_anything_named_like_a_secret() -> None:
    assert settings_lines(Section()) == [
        "api_key = [redacted]",
        "max_tokens = 600",
        "base_url = 'http://127.0.0.1:11434/v1'",
    ]
    assert clean_url("https://a:b@host/v1?k=1#x") == "https://host/v1?[redacted]"
    assert versions()["discord.py"][0].isdigit()
