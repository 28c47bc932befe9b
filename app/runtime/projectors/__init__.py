"""Projectors: background memory workers that turn turns into summaries, facts, dossiers and reflections.

Importing the package registers the built-in workers (builtins.py) with the registry (registry.py).
"""

from app.runtime.projectors import builtins as _builtins  # noqa: F401  (registers the built-ins)
