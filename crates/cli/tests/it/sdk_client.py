"""Lists and calls one tool through the Python MCP SDK's Streamable HTTP
client, once per protocol era (initialize, then server/discover).

Usage: sdk_client.py URL TOKEN TOOL ARGS_JSON EXPECTED_TEXT
"""
import asyncio
import json
import sys

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def run(url, token, tool, args, expected, mode):
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                if mode == "initialize":
                    await session.initialize()
                else:
                    await session.discover()
                listed = await session.list_tools()
                names = [t.name for t in listed.tools]
                assert tool in names, (mode, names)
                result = await session.call_tool(tool, args)
                assert not result.is_error, (mode, result)
                text = result.content[0].text
                assert expected in text, (mode, text)
                print(mode, session.protocol_version, "ok")


async def main():
    url, token, tool, args, expected = sys.argv[1:6]
    for mode in ("initialize", "discover"):
        await run(url, token, tool, json.loads(args), expected, mode)


asyncio.run(main())
