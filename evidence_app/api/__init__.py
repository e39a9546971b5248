"""The evidence API: its routes (validations, replay, audits, trust and team figures) and their
request and response schemas."""
