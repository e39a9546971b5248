"""Changing the judge: the gate that compares a candidate with the current judge on labelled
cases, the judge figures, and the judge page."""
