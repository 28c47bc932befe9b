"""Advice that names a setting: the runtime says which one, each front end words where it is changed.

The window changes settings in its Settings dialog and starts the familiar with its Start button; headless
mode and the commands have neither: there the same advice names the key in character.toml or the
environment variable. So the runtime never writes "in Settings" or "press Start" itself: it builds an
`Advice` (a message: what is wrong, then a `Hint` naming `Setting`s), whose text as a str is the window's
wording (the window shows it as it is), and whose `terminal(toml)` is the terminal's.

    Advice(f"The LLM endpoint {url} rejected the API key (401).", Hint("Check {}", (LLM_API_KEY,), label="the key"))
      window:   "... (401). Check the key in Settings."
      terminal: "... (401). Check the FAMILIAR_LLM_API_KEY environment variable (or the key saved in the keyring)."

An Advice passes through the events (FailureReported, the status's last_error) as the str it is; a front end
that words it otherwise asks `terminal_text(message, toml)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting as each front end names it."""

    label: str  # in the window's Settings: "the LLM endpoint"
    key: str | None  # in character.toml: "[llm] base_url"
    env: str | None  # the environment variable that overrides it
    elsewhere: str | None = None  # where a terminal user sets it when not in character.toml (a secret)

    def terminal(self, toml: Path) -> str:
        if self.key is not None:
            return f"{self.key} in {toml}" + (f" (or {self.env})" if self.env else "")
        if self.elsewhere is not None:
            return self.elsewhere
        return f"the {self.env} environment variable"


BOT_TOKEN = Setting("the bot token", None, "DISCORD_TOKEN")
LLM_BASE_URL = Setting("the LLM endpoint", "[llm] base_url", "FAMILIAR_LLM_BASE_URL")
LLM_MODEL = Setting("the LLM model", "[llm] model", "FAMILIAR_LLM_MODEL")
LLM_API_KEY = Setting(
    "the API key",
    None,
    "FAMILIAR_LLM_API_KEY",
    "the FAMILIAR_LLM_API_KEY environment variable (or the key saved in the keyring)",
)
LLM_TIMEOUT = Setting("the timeout", "[llm] timeout", None)
LLM_MAX_TOKENS = Setting("max_tokens", "[llm] max_tokens", None)
LLM_MAX_CONCURRENCY = Setting("max_concurrency", "[llm] max_concurrency", None)
# The settings the window's Settings dialog edits, by what the runtime calls them when they are missing.
MISSING: dict[str, Setting] = {"bot token": BOT_TOKEN, "LLM endpoint": LLM_BASE_URL, "LLM model": LLM_MODEL}


@dataclass(frozen=True, slots=True)
class Hint:
    """What to do, naming settings: `action` has one {} for them ("Check {}", "Raise {} if it is just slow").

    The window fills it with their labels (or `label`, the words this sentence uses for them: "the model
    name", "them" when the sentence before named them) and "in Settings", then adds `window_extra`; a
    terminal fills `terminal_action` (or `action`) with where each is set. A hint naming no setting is a
    step in the front end: `action` as the window says it, `terminal_action` as a terminal does."""

    action: str
    settings: tuple[Setting, ...] = ()
    label: str | None = None
    terminal_action: str | None = None
    window_extra: str = ""

    def window(self) -> str:
        if not self.settings:
            return self.action
        named = self.label if self.label is not None else " and ".join(s.label for s in self.settings)
        return self.action.format(f"{named} in Settings".strip()) + self.window_extra

    def terminal(self, toml: Path) -> str:
        action = self.terminal_action or self.action
        if not self.settings:
            return action
        return action.format(" and ".join(s.terminal(toml) for s in self.settings))


RESTART = Hint("then press Start again", terminal_action="then start the familiar again")


class Advice(str):
    """A message (`problem`, then `hint`, then `after`) that reads as the window words it; `terminal(toml)`
    words it for a terminal. "{problem} {hint}.{after}" """

    problem: str
    hint: Hint
    after: str

    def __new__(cls, problem: str, hint: Hint, after: str = "") -> Advice:
        made = super().__new__(cls, _joined(problem, hint.window(), after))
        made.problem, made.hint, made.after = problem, hint, after
        return made

    def terminal(self, toml: Path) -> str:
        return _joined(self.problem, self.hint.terminal(toml), self.after)


def _joined(problem: str, hint: str, after: str) -> str:
    said = hint[:1].upper() + hint[1:] if problem.endswith(".") else hint
    return f"{problem} {said}.{after}" if problem else f"{said[:1].upper()}{said[1:]}.{after}"


def terminal_text(message: str, toml: Path) -> str:
    """`message` as a terminal words it: an Advice names character.toml and the environment."""
    return message.terminal(toml) if isinstance(message, Advice) else message


def missing_setup(missing: tuple[str, ...]) -> Advice:
    """What Start (or a chat) is refused for while settings are missing ("LLM endpoint", "bot token"...)."""
    settings = tuple(MISSING[name] for name in missing)
    if BOT_TOKEN in settings:  # the first thing to set: the rest is said once it is
        return Advice(
            "No bot token yet:",
            Hint("paste {}", (BOT_TOKEN,), label="it", terminal_action="set {}", window_extra=", or set DISCORD_TOKEN"),
        )
    return Advice(
        f"No {' and no '.join(missing)} yet:",
        Hint("set {}", settings, label="them"),
    )


__all__ = [
    "BOT_TOKEN",
    "LLM_API_KEY",
    "LLM_BASE_URL",
    "LLM_MAX_CONCURRENCY",
    "LLM_MAX_TOKENS",
    "LLM_MODEL",
    "LLM_TIMEOUT",
    "RESTART",
    "Advice",
    "Hint",
    "Setting",
    "missing_setup",
    "terminal_text",
]
