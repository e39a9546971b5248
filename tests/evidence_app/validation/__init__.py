"""Tests of evidence_app.validation."""
