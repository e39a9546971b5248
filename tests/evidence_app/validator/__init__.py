"""Tests of evidence_app.validator."""
