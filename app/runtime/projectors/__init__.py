"""Projectors: background memory workers that turn turns into summaries, facts, dossiers and reflections."""
