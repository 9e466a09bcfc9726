"""A client of the official Python MCP SDK, run by the MCP server tests.

usage: mcp_python_client.py TOOL JSON_ARGS stdio COMMAND [ARG...]
       mcp_python_client.py TOOL JSON_ARGS http URL

Connects, lists the tools, calls TOOL with JSON_ARGS, closes the session (over HTTP the SDK ends
it with a DELETE), and prints one JSON object: the server's name, the listed tools with their
annotations, the call's result, and every warning the SDK logged (a failed session ending is
one).
"""

import asyncio
import json
import logging
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


async def session_run(read, write, tool, args):
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        listed = await session.list_tools()
        result = await session.call_tool(tool, args)
        return {
            "server": {"name": init.server_info.name, "version": init.server_info.version},
            "tools": [
                {
                    "name": t.name,
                    "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                    if t.annotations
                    else None,
                }
                for t in listed.tools
            ],
            "result": {
                "isError": bool(result.is_error),
                "text": "".join(c.text for c in result.content if getattr(c, "type", "") == "text"),
            },
        }


async def main():
    tool, args, transport, rest = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
    warnings = Warnings()
    logging.getLogger("mcp").addHandler(warnings)
    if transport == "stdio":
        params = StdioServerParameters(command=rest[0], args=rest[1:])
        async with stdio_client(params) as (read, write):
            out = await session_run(read, write, tool, args)
    elif transport == "http":
        async with streamable_http_client(rest[0]) as (read, write):
            out = await session_run(read, write, tool, args)
    else:
        sys.exit(f"unknown transport `{transport}`; use stdio or http")
    out["warnings"] = warnings.messages
    print(json.dumps(out))


asyncio.run(main())
