"""Tests of evidence_app.management."""
