"""Tools from MCP servers (``[[mcp_servers]]``), offered to the model as ``<server>__<tool>``.

See docs/mcp.md. Importing this package does not import the MCP SDK: ``McpToolbox`` does when
it is given servers.
"""

from youyou.adapters.mcp.names import model_tool_names
from youyou.adapters.mcp.toolbox import McpServerReport, McpToolbox

__all__ = ["McpServerReport", "McpToolbox", "model_tool_names"]
