"""The agent runtime: model resolution, the agent loop, tools, teams, offline models."""
