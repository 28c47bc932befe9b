"""The lorebook engine: lorebook.toml (book.py), its keys (keys.py) and their bounded regex matching
(bounded_regex.py), the activation scan (scanner.py), round-trip editing (document.py), and the formats of
the field (formats.py).

Pure: it reads and writes files it is given and computes, nothing more. It imports neither the store
(app.memory), the runtime, Discord, the LLM client nor Qt (import-linter contracts in pyproject.toml); the
runtime passes in what it needs (the recent messages) and keeps what changes.
"""
