"""Tests of evidence_app.judges."""
