"""Tests of evidence_app.trust."""
