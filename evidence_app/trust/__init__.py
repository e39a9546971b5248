"""How far the verdicts can be trusted: audits drawn and judged, certified rates, exact
binomial statistics, agreement, claim labels and team figures."""
