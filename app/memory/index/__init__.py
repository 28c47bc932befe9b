"""The index committer's jobs, one module each; `app/memory/committer.py` (IndexCommitter) coordinates them.

- core.py: what they share (the index, SQL as an `IndexSource`, the one worker thread, the numbers and state)
- backoff.py: lock backoff (a lock or a full disk counted, and the pause before the next try)
- group_commit.py: group commits (one round: what SQL has past the watermark, retried through a lock)
- compaction.py: compaction (removed documents purged from the files)
- reconcile.py: reconciliation (the index compared with SQL and repaired)
- rebuild.py: rebuild beside (a new index built next to the live one and swapped in)
- health_file.py: the cross-process health file
- fallback.py: search fallback (search, and why not; what the store must add)
- figures.py: the index health pane's figures
"""

COMMITTER_LOG = "app.memory.committer"
"""The one logger name of the committer's story, whichever job tells it (log readers and tests match on it)."""
