"""Validating an attempt: the judge's verdict stored and routed, the claims shown, replay and
shadow judging, the verdicts handed to tasks_app."""
