"""Familiar: an AI character for your own Discord server, with a window onto its memory."""

__version__ = "0.1.0"
