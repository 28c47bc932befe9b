"""The Discord adapter: the only part of the runtime that imports discord.py (the gateway, sending, the
token check, catching up on missed messages). The runtime reaches it through app/runtime/platforms.py."""
