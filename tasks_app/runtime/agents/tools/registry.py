"""The tool registry: one place tools are declared, offered and run; a tool
error becomes a result the model reads, never a crash."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.tools import ToolDefinition

log = logging.getLogger(__name__)


class ToolError(Exception):
    """A failure the model should read as the tool's result."""


@dataclass
class ToolOutput:
    content: str
    title: str = ""
    url: str = ""
    is_error: bool = False
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., ToolOutput]

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name, description=self.description, parameters_json_schema=self.parameters
        )


REGISTRY: dict[str, Tool] = {}
DEFAULT_TOOLS = ("search_knowledge", "read_document", "fetch_url")


def register_tool(tool: Tool) -> Tool:
    REGISTRY[tool.name] = tool
    return tool


def tool_definitions(names: list[str] | tuple[str, ...]) -> list[ToolDefinition]:
    return [REGISTRY[name].definition() for name in names if name in REGISTRY]


def run_tool(name: str, arguments: Mapping[str, Any] | str | None) -> ToolOutput:
    """Run a registered tool; unknown tools, bad arguments and failures come back as an
    error result so the model can react."""
    tool = REGISTRY.get(name)
    if tool is None:
        return ToolOutput(content=f"Error: there is no tool named '{name}'.", is_error=True)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolOutput(content=f"Error: arguments are not valid JSON: {exc}", is_error=True)
    if not isinstance(arguments, Mapping):
        return ToolOutput(content="Error: arguments must be a JSON object.", is_error=True)
    try:
        return tool.func(**arguments)
    except TypeError as exc:
        return ToolOutput(content=f"Error: bad arguments for {name}: {exc}", is_error=True)
    except ToolError as exc:
        return ToolOutput(content=f"Error: {exc}", is_error=True)
    except Exception as exc:  # a tool bug must not end the run
        log.exception("tool %s failed", name)
        return ToolOutput(
            content=f"Error: {name} failed: {type(exc).__name__}: {exc}", is_error=True
        )
