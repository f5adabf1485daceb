export { closeMcpToolSources, mcpTools } from './mcp-tools.js'
export type { McpServerSpec, McpToolSource, McpToolsOptions } from './mcp-tools.js'
export { createLocusMcpServer } from './locus-mcp-server.js'
export type { LocusMcpServerOptions } from './locus-mcp-server.js'
