"""Tests of evidence_app.packets."""
