"""The runtime's errors: every error the facade raises is one of these (a FamiliarError), each message one
line a user can act on. Front ends catch FamiliarError; anything else is a bug, never worded as a message."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.runtime.api.facade import ChatLine
    from app.runtime.api.views import FactView


class FamiliarError(Exception):
    """A failure of the familiar explained in one line (bad token, missing intent, unreachable LLM...).

    Its message may be an Advice (app/runtime/hints.py: advice naming a setting); `str()` gives it back as
    it is, so a front end can word the advice its own way (`terminal_text`)."""

    def __str__(self) -> str:
        first = self.args[0] if len(self.args) == 1 else None
        return first if isinstance(first, str) else super().__str__()


class DiskFullError(FamiliarError):
    """A write the disk refused for want of room. What it was about is kept to try again (a message
    is fetched again from Discord once there is room: app/runtime/outage.py)."""


class StaleRevisionError(FamiliarError):
    """An action carried a revision that is no longer current: the fact changed meanwhile.

    `current` is the fact as it stands now (None when it is gone), so a pane can show the new version
    instead of an error.
    """

    def __init__(self, message: str, fact_id: int, current: FactView | None) -> None:
        super().__init__(message)
        self.fact_id = fact_id
        self.current = current


class CharacterChangedError(FamiliarError):
    """A save (or an undo of one) carried a revision of character.toml / character.md that is no longer
    what is on disk: someone edited them meanwhile. Reload them first; nothing was written."""


class ReplyFailedError(FamiliarError):
    """The local chat's message was stored but its reply failed (the endpoint timed out, refused...).

    `said` is the owner's message as stored (`regenerate_local(said.turn_id)` answers it), `greeting` the
    greeting stored before it when the chat opened with one."""

    def __init__(self, message: str, said: ChatLine, greeting: ChatLine | None = None) -> None:
        super().__init__(message)
        self.said = said
        self.greeting = greeting


class LLMError(FamiliarError):
    """The LLM endpoint could not give an answer; the message is one line a user can act on."""


class CardError(FamiliarError):
    """A file that is not a character card this reads, or a card that cannot be written, in one line."""


class CardNameError(CardError):
    """The card's name gives no usable familiar name: the caller must choose one."""


class LoreConflictError(FamiliarError):
    """lorebook.toml changed on disk after the revision a save was based on: nothing was written.

    `current` is the file's revision now: load it again (or merge with it) before saving."""

    def __init__(self, message: str, current: str) -> None:
        super().__init__(message)
        self.current = current


class RebuildCancelledError(FamiliarError):
    """The rebuild was cancelled: every index answers exactly as it did before."""


class SendGaveUpError(FamiliarError):
    """A reply's message was not sent (or cannot be shown to have been) within the retry window."""
