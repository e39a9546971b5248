"""The chaos drill (issue 17): ``make chaos`` / ``python -m chaos``; see ``chaos.drill``."""
