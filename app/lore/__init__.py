"""The lorebook engine: lorebook.toml (book.py), its keys (keys.py) and their bounded regex matching
(bounded_regex.py), the key scan (scanner.py), activation with SillyTavern's rules (activation.py), the name
macros (macros.py), lint (lint.py), round-trip editing (document.py), and the formats of the field
(formats.py).

Pure: it reads and writes the files it is given and computes, nothing more. It imports neither the store
(app.memory), the runtime, Discord, the LLM client nor Qt (import-linter contracts in pyproject.toml); the
runtime passes in what it needs (the recent messages, a place's message clock and timed effects, a seed)
and keeps what changes (app/memory/lore_state.py).
"""
