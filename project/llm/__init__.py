"""The model layer shared by the agent runtime and the validator: model names resolved to
pydantic-ai models (``registry``) and helpers for reading message lists (``messages``)."""
