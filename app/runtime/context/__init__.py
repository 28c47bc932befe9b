"""The context pipeline: layers, the assembler, token budgets, the fence and the lorebook."""
