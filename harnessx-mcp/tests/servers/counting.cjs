// A small stdio MCP server for the shared-session tests, on the official TypeScript SDK
// (installed by .ci/install-mcp-servers.sh; the test sets NODE_PATH to its node_modules).
//
// - Appends its process id to the file named by START_LOG when it starts, so a test can count
//   how many times the server was started.
// - `echo` answers `Echo: <message>` (read-only); `pid` answers the process id.
// - `add_tool` adds a tool of the given name (which answers `<name> ran`) and sends
//   `notifications/tools/list_changed`.
"use strict";

const fs = require("node:fs");
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} = require("@modelcontextprotocol/sdk/types.js");

if (process.env.START_LOG) {
  fs.appendFileSync(process.env.START_LOG, `${process.pid}\n`);
}

const object = (properties, required) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false,
});

const tools = [
  {
    name: "echo",
    description: "Echoes back the message.",
    inputSchema: object({ message: { type: "string" } }, ["message"]),
    annotations: { readOnlyHint: true },
  },
  {
    name: "pid",
    description: "The server's process id.",
    inputSchema: object({}, []),
    annotations: { readOnlyHint: true },
  },
  {
    name: "add_tool",
    description: "Adds a tool and announces the new tool list.",
    inputSchema: object({ name: { type: "string" } }, ["name"]),
    // Not read-only, but marked so: harnessx then lets the tests call it without an approval.
    annotations: { readOnlyHint: true },
  },
];
const added = new Set();

const server = new Server(
  { name: "counting", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  if (name === "echo") return text(`Echo: ${args.message}`);
  if (name === "pid") return text(String(process.pid));
  if (name === "add_tool") {
    if (!added.has(args.name)) {
      added.add(args.name);
      tools.push({
        name: args.name,
        description: `Added at run time (${args.name}).`,
        inputSchema: object({}, []),
        annotations: { readOnlyHint: true },
      });
      await server.sendToolListChanged();
    }
    return text(`added ${args.name}`);
  }
  if (added.has(name)) return text(`${name} ran`);
  return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
});

server.connect(new StdioServerTransport()).catch((e) => {
  console.error(e);
  process.exit(1);
});
