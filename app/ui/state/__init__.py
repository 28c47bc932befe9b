"""What a pane holds apart from its widgets: plain objects, no Qt (an import-linter contract keeps it so).

As Anki keeps a browser table's state apart from its view, a pane here keeps its Qt-free logic (the
lorebook's draft and its merge, the pending queue's decisions in flight, the timeline's as-of times) in an
object of this package, tested without a window; the pane shows what the object says.
"""
