// Connects the official MCP TypeScript SDK client to a harnessx MCP server, lists its tools,
// calls one and prints {"server", "tools", "result"} as JSON on stdout.
//
// node mcp_sdk_client.cjs NODE_MODULES TOOL ARGS_JSON http URL
// node mcp_sdk_client.cjs NODE_MODULES TOOL ARGS_JSON stdio COMMAND [ARGS...]
//
// NODE_MODULES is the folder .ci/install-mcp-servers.sh installs @modelcontextprotocol/sdk into.
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

async function main() {
  const [modules, tool, argsJson, transport, ...rest] = process.argv.slice(2);
  const sdk = createRequire(path.join(modules, "harnessx-test.js"));
  const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
  let client_transport;
  if (transport === "http") {
    const { StreamableHTTPClientTransport } = sdk("@modelcontextprotocol/sdk/client/streamableHttp.js");
    client_transport = new StreamableHTTPClientTransport(new URL(rest[0]));
  } else if (transport === "stdio") {
    const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");
    client_transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" });
  } else {
    throw new Error(`unknown transport ${transport}; use http or stdio`);
  }
  const client = new Client({ name: "harnessx-sdk-test", version: "1.0.0" });
  await client.connect(client_transport);
  const listed = await client.listTools();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJson) });
  process.stdout.write(JSON.stringify({ server: client.getServerVersion(), tools: listed.tools, result }) + "\n");
  await client.close();
}

main().catch((e) => {
  process.stderr.write(`mcp_sdk_client: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
