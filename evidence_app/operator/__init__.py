"""The operator pages: validations and their requests, replay, agreement, charts, the team's
figures and the certified rates."""
