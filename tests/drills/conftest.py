"""Drill fixtures. Each drill module is marked ``drill``; the ones too slow for CI are
also marked ``drill_slow`` (``make test`` leaves them out, ``make drills`` runs them)."""
