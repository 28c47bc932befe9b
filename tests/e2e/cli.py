"""Running the real `familiar` entry point in-process, as the e2e command tests do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli import main


class Cli:
    def __init__(
        self,
        home: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        *,
        familiar: bool = True,
    ) -> None:
        """`familiar`: the "default" familiar's folder exists (commands never create a familiar; opening one
        fills in the template's missing files), empty, so its lorebook.toml does not exist yet."""
        self._capsys = capsys
        self.home = home
        self.lorebook = home / "familiars" / "default" / "lorebook.toml"
        if familiar:
            self.lorebook.parent.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("FAMILIAR_HOME", str(home))
        for name in ("DISCORD_TOKEN", "FAMILIAR_LLM_BASE_URL", "FAMILIAR_LLM_MODEL"):
            monkeypatch.delenv(name, raising=False)

    def json(self, *argv: str) -> Any:
        code, out, err = self.run(*argv, "--json")
        assert code == 0, err
        return json.loads(out)

    def run(self, *argv: str) -> tuple[int, str, str]:
        self._capsys.readouterr()
        code = main(list(argv))
        captured = self._capsys.readouterr()
        return code, captured.out, captured.err
