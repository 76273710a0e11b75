"""The official MCP Python SDK (`mcp`) as a user's client of a protected toolsmith server (the
`mcp_auth` example): it sends a bearer token in the `Authorization` header, as an application
that holds an access token does.

    python auth_client.py <endpoint URL> <token with tickets:read> <token with both scopes>

Without a token the SDK cannot open the connection (401); with the read token it initializes,
lists only the tool its scope allows and calls it as the token's subject, and a call of the
write tool is refused (403) without running; with the wider token the write tool runs.

Prints one line per failed check, then a tally; exits 1 on any failure.
"""

import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL, READER, WRITER = sys.argv[1], sys.argv[2], sys.argv[3]

passed = 0
failed = []


def check(label, condition, detail=""):
    global passed
    if condition:
        passed += 1
    else:
        failed.append(f"{label}: {detail}" if detail else label)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


# Every HTTP answer the SDK got: (status, WWW-Authenticate). The SDK reports a refused request
# as a JSON-RPC error without its status, so the status is read off the wire here.
answers = []


async def record(response):
    answers.append((response.status_code, response.headers.get("www-authenticate", "")))


async def session_with(token, body):
    """Runs `body(session)` in a session whose every request carries `token`."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        http.event_hooks = {"response": [record]}
        async with streamable_http_client(URL, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                with anyio.fail_after(20):
                    await session.initialize()
                    return await body(session)


async def main():
    # No token: the connection is refused before any tool is reached.
    try:
        with anyio.fail_after(20):
            await session_with(None, lambda session: session.list_tools())
        check("no token: refused", False, "the session opened")
    except BaseException:  # the SDK raises from its task group
        check("no token: refused with 401", [status for status, _ in answers] == [401], str(answers))
        challenge = answers[-1][1] if answers else ""
        check("no token: the challenge names the metadata", "resource_metadata=" in challenge, challenge)

    async def as_reader(session):
        listed = await session.list_tools()
        names = [tool.name for tool in listed.tools]
        check("read token: lists only what its scope allows", names == ["read_ticket"], str(names))
        result = await session.call_tool("read_ticket", {"id": 3})
        text = text_of(result)
        check("read token: the call runs as the token's subject", "read by ada" in text, text)
        answers.clear()
        try:
            closed = await session.call_tool("close_ticket", {"id": 3})
            check("read token: the write tool is refused", False, text_of(closed))
        except BaseException:
            status, challenge = answers[-1] if answers else (None, "")
            check("read token: the write tool is refused with 403", status == 403, str(answers))
            check(
                "read token: the challenge names the scope to step up to",
                'error="insufficient_scope"' in challenge and 'scope="tickets:write"' in challenge,
                challenge,
            )

    await session_with(READER, as_reader)

    async def as_writer(session):
        listed = await session.list_tools()
        names = sorted(tool.name for tool in listed.tools)
        check("wider token: lists both tools", names == ["close_ticket", "read_ticket"], str(names))
        result = await session.call_tool("close_ticket", {"id": 3})
        text = text_of(result)
        check("wider token: the write tool runs", "closed by ada" in text, text)

    await session_with(WRITER, as_writer)


anyio.run(main)
for line in failed:
    print("FAILED", line)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
