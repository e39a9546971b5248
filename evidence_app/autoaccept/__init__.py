"""Certifying a confidence threshold for accepting without review, from labelled verdicts."""
