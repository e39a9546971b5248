"""Tests of evidence_app.autoaccept."""
