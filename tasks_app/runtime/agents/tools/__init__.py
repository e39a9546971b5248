"""The agent's tools, one module per job: ``registry`` (declare, offer and run
tools; errors become results), ``knowledge`` (``search_knowledge``, ``read_document``),
``fetch`` (``fetch_url`` behind the SSRF guard). Importing the package registers them."""

from __future__ import annotations

from tasks_app.runtime.agents.tools.fetch import fetch_url, html_to_text
from tasks_app.runtime.agents.tools.knowledge import read_document, search_knowledge
from tasks_app.runtime.agents.tools.registry import (
    DEFAULT_TOOLS,
    REGISTRY,
    Tool,
    ToolError,
    ToolOutput,
    register_tool,
    run_tool,
    tool_definitions,
)

__all__ = [
    "DEFAULT_TOOLS",
    "REGISTRY",
    "Tool",
    "ToolError",
    "ToolOutput",
    "fetch_url",
    "html_to_text",
    "read_document",
    "register_tool",
    "run_tool",
    "search_knowledge",
    "tool_definitions",
]
