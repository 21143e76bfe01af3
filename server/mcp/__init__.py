"""``toolhost mcp``: the catalogue as an MCP server (the official ``mcp`` SDK), alone or
attached to an editor's sidecar."""
