"""Tests of evidence_app.judge_bench."""
