"""The projector registry: the names `[providers.memory].projectors` may list, and what each builds.

A leaf: it knows the `MemoryProjector` protocol, no projector. The built-ins register from
builtins.py, which the package imports, so they are in whenever this module is; a third-party
projector registers at its own import time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.runtime.projectors.base import MemoryProjector, ProjectorDeps

Factory = Callable[[ProjectorDeps], MemoryProjector]
_REGISTRY: dict[str, Factory] = {}


def register_projector(name: str, factory: Factory) -> None:
    """Make a projector available to `[providers.memory].projectors` (call at import time)."""
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"a projector name is letters, digits and underscores, not {name!r}")
    _REGISTRY[name] = factory


def projector_names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def unknown_projectors(names: Sequence[str]) -> list[str]:
    return [n for n in names if n not in _REGISTRY]


def create_projectors(names: Sequence[str], deps: ProjectorDeps) -> list[MemoryProjector]:
    missing = unknown_projectors(names)
    if missing:
        raise ValueError(f"unknown projector {missing[0]!r} (known: {', '.join(projector_names())})")
    return [_REGISTRY[n](deps) for n in dict.fromkeys(names)]
