"""Tests of evidence_app.offline_judge."""
