"""The facade the window and the commands use (facade.py, the Protocol), its sub-APIs (memory, lore,
character, setup, controls, indexes) and the view records they answer with (views.py, setup_views.py)."""
