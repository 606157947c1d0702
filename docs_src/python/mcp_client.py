"""What a coding agent does over MCP, with the official `mcp` SDK's client: list tools, ask, get a refusal."""

import asyncio
import sys

from mcp import Client

# python docs_src/python/mcp_client.py [SERVER_URL] [CORPUS]
BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
CORPUS = sys.argv[2] if len(sys.argv) > 2 else "astro"


async def main():
    # `citedocs serve` serves MCP at /mcp; for stdio: Client(StdioServerParameters(command="citedocs", args=["mcp"]))
    async with Client(f"{BASE}/mcp", read_timeout_seconds=120) as client:
        print([tool.name for tool in (await client.list_tools()).tools])
        result = await client.call_tool("ask_docs", {"question": "How do I deploy my Astro site to Heroku?", "corpus": CORPUS})
        print(result.structured_content["answer"])
        print([c["url"] for c in result.structured_content["citations"]])
        result = await client.call_tool("ask_docs", {"question": "How do I enable the client:hover directive?", "corpus": CORPUS})
        print(result.structured_content["refused"], result.structured_content["refusal_reason"])


asyncio.run(main())
