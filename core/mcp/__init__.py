"""MCP servers: connections (manager), tool pinning (pins), confirmations (confirm), `/mcp`."""
