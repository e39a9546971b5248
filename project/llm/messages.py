"""Reading pydantic-ai message lists: the parts scripted and offline models look at."""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)


def first_user_prompt(messages: list[ModelMessage]) -> str:
    """The text of the first user prompt (the material; later ones are feedback)."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """Every tool result sent back to the model, in order."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def tool_calls(messages: list[ModelMessage]) -> list[ToolCallPart]:
    """Every tool call the model made, in order."""
    return [
        part
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
