"""Calls tools through the Python MCP SDK's Streamable HTTP client on a
server with structured output on. The SDK checks each non-error answer's
structuredContent against the tool's outputSchema and raises when it does
not conform or is missing.

Usage: sdk_structured.py URL TOKEN CALLS_JSON
CALLS_JSON is a list of [tool, arguments]; an argument "$PID" is replaced
by the pid the last start_process answer named.
"""
import asyncio
import json
import re
import sys

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


def with_pid(value, pid):
    if value == "$PID":
        return pid
    if isinstance(value, dict):
        return {k: with_pid(v, pid) for k, v in value.items()}
    if isinstance(value, list):
        return [with_pid(v, pid) for v in value]
    return value


async def main():
    url, token, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                schemas = {t.name: t.output_schema for t in listed.tools}
                assert all(schemas.values()), schemas
                pid = None
                for tool, args in calls:
                    result = await session.call_tool(tool, with_pid(args, pid))
                    assert not result.is_error, (tool, result)
                    if tool in schemas:
                        assert result.structured_content is not None, (tool, result)
                    if tool == "start_process":
                        pid = int(re.search(r"PID (\d+)", result.content[0].text).group(1))
                    print(tool, "ok")


asyncio.run(main())
