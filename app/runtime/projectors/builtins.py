"""Registers the built-in projectors under the names `[providers.memory].projectors` uses."""

from __future__ import annotations

from app.runtime.projectors.dossier import PeopleDossierProjector
from app.runtime.projectors.dreaming import DreamingProjector
from app.runtime.projectors.embedding import FactEmbeddingProjector
from app.runtime.projectors.reflection import ReflectionProjector
from app.runtime.projectors.registry import register_projector
from app.runtime.projectors.rich_note import RichNoteProjector
from app.runtime.projectors.summary import RollingSummaryProjector
from app.runtime.projectors.supersede import FactSupersedeProjector

register_projector("rolling_summary", RollingSummaryProjector)
register_projector("rich_note", RichNoteProjector)
register_projector("people_dossier", PeopleDossierProjector)
register_projector("reflection", ReflectionProjector)
register_projector("fact_supersede", FactSupersedeProjector)
register_projector("fact_embedding", FactEmbeddingProjector)
register_projector("dreaming", DreamingProjector)
