"""The runtime's exception root. Every message is one line a user can act on."""


class FamiliarError(Exception):
    """A failure of the familiar explained in one line (bad token, missing intent, unreachable LLM...)."""
