"""The official MCP Python SDK (`mcp`) against the `mcp_server` example, over stdio and over
streamable HTTP.

    python client.py <mcp_server binary> <MCP JSON schema> <expected tools/list JSON>

On each transport: initialize, tools/list (all pages), tools/call with valid, invalid and
unknown-tool requests, structuredContent checked against the tool's outputSchema, and every
JSON-RPC message in both directions validated against the MCP 2025-11-25 JSON Schema. Messages
are captured between the SDK's session and its transport and dumped as the transport writes
them (`by_alias`, `exclude_unset`), so what is validated is what crossed the wire.

Prints one line per failed check, then a tally; exits 1 on any failure.
"""

import json
import signal
import subprocess
import sys
from contextlib import asynccontextmanager

import anyio
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import PaginatedRequestParams

SERVER, SCHEMA, EXPECTED = sys.argv[1:4]
WIRE = json.load(open(SCHEMA, encoding="utf-8"))
EXPECTED_TOOLS = json.load(open(EXPECTED, encoding="utf-8"))["tools"]

passed = 0
failed = []


def check(label, condition, detail=""):
    global passed
    if condition:
        passed += 1
    else:
        failed.append(f"{label}: {detail}" if detail else label)


def wire_errors(definition, value):
    validator = Draft202012Validator(
        {"$schema": WIRE["$schema"], "$defs": WIRE["$defs"], "$ref": f"#/$defs/{definition}"}
    )
    return [f"{e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(value)]


def dump(message):
    return message.model_dump(by_alias=True, mode="json", exclude_unset=True)


@asynccontextmanager
async def tapped(streams, log):
    """The transport's streams, with every message copied into `log` as (direction, JSON)."""
    read, write = streams[0], streams[1]
    to_session, session_reads = anyio.create_memory_object_stream(100)
    session_writes, from_session = anyio.create_memory_object_stream(100)

    async def inbound():
        async with to_session:
            async for item in read:
                if isinstance(item, SessionMessage):
                    log.append(("server", dump(item.message)))
                await to_session.send(item)

    async def outbound():
        async with from_session:
            async for item in from_session:
                log.append(("client", dump(item.message)))
                await write.send(item)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(inbound)
        tasks.start_soon(outbound)
        yield session_reads, session_writes
        tasks.cancel_scope.cancel()


def validate_log(transport, log):
    """Every message against JSONRPCMessage, then against its kind's definition."""
    methods = {}
    for direction, message in log:
        label = f"{transport} {direction} message {json.dumps(message)[:120]}"
        errors = wire_errors("JSONRPCMessage", message)
        check(f"{label}: JSONRPCMessage", not errors, "; ".join(errors[:3]))
        if "method" in message and "id" in message:
            methods[message["id"]] = message["method"]
            kind = "ClientRequest" if direction == "client" else "ServerRequest"
            errors = wire_errors(kind, message)
        elif "method" in message:
            kind = "ClientNotification" if direction == "client" else "ServerNotification"
            errors = wire_errors(kind, message)
        elif "error" in message:
            kind = "JSONRPCErrorResponse"
            errors = wire_errors(kind, message)
        else:
            kind = {
                "initialize": "InitializeResult",
                "tools/list": "ListToolsResult",
                "tools/call": "CallToolResult",
            }.get(methods.get(message.get("id")), "Result")
            errors = wire_errors(kind, message.get("result"))
        check(f"{label}: {kind}", not errors, "; ".join(errors[:3]))
    check(f"{transport}: messages were captured", len(log) >= 10, f"only {len(log)}")


def envelope(result):
    texts = [c.text for c in result.content if c.type == "text"]
    return json.loads(texts[0]) if texts else None


async def exercise(transport, session, signed_in):
    init = await session.initialize()
    check(f"{transport}: protocol version", init.protocol_version == "2025-11-25", init.protocol_version)
    check(f"{transport}: server name", init.server_info.name == "toolsmith-quickstart", init.server_info.name)
    tools_capability = init.capabilities.tools
    check(f"{transport}: tools.listChanged", tools_capability is not None and tools_capability.list_changed is True)

    # tools/list, following nextCursor to the end.
    listed, cursor, pages = [], None, 0
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        pages += 1
        listed.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or pages > 10:
            break
    check(f"{transport}: tools/list is paginated", pages == 2, f"{pages} pages")
    got = [t.model_dump(by_alias=True, mode="json", exclude_unset=True) for t in listed]
    check(f"{transport}: tools/list is what the toolbox exports", got == EXPECTED_TOOLS, json.dumps(got)[:300])
    by_name = {t.name: t for t in listed}
    search = by_name.get("search_web")
    check(f"{transport}: search_web has an outputSchema", search is not None and search.output_schema is not None)
    if search is not None:
        hints = search.annotations
        check(f"{transport}: search_web annotations", hints.read_only_hint is True and hints.open_world_hint is True)
    event = by_name.get("calendar.create_event")
    if event is not None:
        check(f"{transport}: create_event title", event.title == "Create event", event.title)
        hints = event.annotations
        check(f"{transport}: create_event annotations", hints.read_only_hint is False and hints.destructive_hint is False)

    # A valid call with structured output (the SDK also checks it against outputSchema).
    ok = await session.call_tool("search_web", {"query": "rust async traits", "num_results": 2})
    check(f"{transport}: valid call is not an error", ok.is_error is False, str(ok))
    structured = ok.structured_content or {}
    check(f"{transport}: structuredContent", len(structured.get("hits", [])) == 2, json.dumps(structured))
    schema = search.output_schema if search is not None else {}
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(structured)]
    check(f"{transport}: structuredContent matches outputSchema", not errors, "; ".join(errors))
    check(f"{transport}: text content carries the same JSON", envelope(ok) == structured)

    added = await session.call_tool("add", {"a": 2, "b": 3})
    check(f"{transport}: add", envelope(added) == {"status": "success", "data": 5}, str(added))

    # Invalid arguments: an isError result whose text says what to fix.
    bad = await session.call_tool("search_web", {"query": "r", "num_results": 11, "sort": "date"})
    check(f"{transport}: invalid call is an error result", bad.is_error is True, str(bad))
    error = (envelope(bad) or {}).get("error", {})
    check(f"{transport}: invalid_arguments", error.get("code") == "invalid_arguments", json.dumps(error))
    pointers = sorted(f["pointer"] for f in error.get("fields", []))
    check(f"{transport}: every violation", pointers == ["/num_results", "/query", "/sort"], str(pointers))
    check(f"{transport}: actionable message", "call the tool again" in error.get("message", ""), error.get("message"))

    # The context hook: the principal comes from the transport.
    created = await session.call_tool("calendar.create_event", {"title": "Standup", "attendees": []})
    if signed_in:
        check(f"{transport}: create_event signed in", created.is_error is False, str(created))
    else:
        code = (envelope(created) or {}).get("error", {}).get("code")
        check(f"{transport}: create_event without a user", created.is_error and code == "permission_denied", str(created))

    # An unknown tool is a JSON-RPC -32602 error.
    try:
        await session.call_tool("search_news", {"query": "rust"})
        check(f"{transport}: unknown tool raises", False, "no error")
    except MCPError as e:
        check(f"{transport}: unknown tool is -32602", e.error.code == -32602, str(e.error))
        check(f"{transport}: unknown tool message", e.error.message == "Unknown tool: search_news", e.error.message)


async def over_stdio():
    log = []
    params = StdioServerParameters(command=SERVER, args=["--page-size", "2"])
    async with stdio_client(params) as streams, tapped(streams, log) as (read, write):
        async with ClientSession(read, write) as session:
            await exercise("stdio", session, signed_in=True)
    validate_log("stdio", log)


async def over_http():
    server = subprocess.Popen(
        [SERVER, "--http", "127.0.0.1:0", "--page-size", "2"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        check("http: the server prints its URL", url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url)
        for user, signed_in in ((None, False), ("ada@example.com", True)):
            log = []
            headers = {"x-user": user} if user else None
            async with create_mcp_http_client(headers=headers) as http:
                async with streamable_http_client(url, http_client=http) as streams, tapped(streams, log) as (read, write):
                    async with ClientSession(read, write) as session:
                        await exercise(f"http ({user or 'anonymous'})", session, signed_in)
            validate_log(f"http ({user or 'anonymous'})", log)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            code = server.wait(timeout=10)
            check("http: the server stops on Ctrl-C", code == 0, f"exit code {code}")
        except subprocess.TimeoutExpired:
            server.kill()
            check("http: the server stops on Ctrl-C", False, "still running after 10 s")


async def main():
    await over_stdio()
    await over_http()


anyio.run(main)
for line in failed:
    print("FAILED", line)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
