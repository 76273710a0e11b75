"""Checks toolsmith's provider JSON with the providers' own SDKs and schemas, offline.

Input: the path of a bundle written by tests/oracles.rs (exported tools per dialect, encoded
results, the MCP wire schema). Prints one line per failed check, then a tally; exits 1 on any
failure. Run by the Rust test with the virtualenv scripts/test.sh creates under target/.
"""

import copy
import json
import sys

import pydantic
from jsonschema import Draft202012Validator

from tally import check, report


def schema_of(dialect, tool):
    if dialect in ("openai", "openai-strict"):
        return tool["function"]["parameters"]
    if dialect.startswith("openai-responses"):
        return tool["parameters"]
    if dialect.startswith("anthropic"):
        return tool["input_schema"]
    return tool["inputSchema"]


def main(path):
    bundle = json.load(open(path, encoding="utf-8"))
    tools = bundle["tools"]
    results = bundle["results"]

    # Every JSON Schema we export is a valid 2020-12 schema.
    for dialect in ("openai", "openai-strict", "openai-responses", "openai-responses-strict",
                    "anthropic", "anthropic-strict"):
        for tool in tools[dialect]:
            check(f"{dialect} {tool.get('name') or tool['function']['name']}: meta-schema",
                  lambda t=tool, d=dialect: Draft202012Validator.check_schema(schema_of(d, t)))
    for tool in tools["mcp"]["tools"]:
        check(f"mcp {tool['name']}: inputSchema meta-schema",
              lambda t=tool: Draft202012Validator.check_schema(t["inputSchema"]))
        if "outputSchema" in tool:
            check(f"mcp {tool['name']}: outputSchema meta-schema",
                  lambda t=tool: Draft202012Validator.check_schema(t["outputSchema"]))

    # OpenAI strict output is a fixed point of openai-agents' strictifier.
    from agents.strict_schema import ensure_strict_json_schema

    def fixed_point(schema):
        again = ensure_strict_json_schema(copy.deepcopy(schema))
        if again != schema:
            raise AssertionError(f"changed by ensure_strict_json_schema:\n{json.dumps(again)}\n!=\n{json.dumps(schema)}")

    for tool in tools["openai-strict"]:
        check(f"openai-strict {tool['function']['name']}: strict fixed point",
              lambda t=tool: fixed_point(t["function"]["parameters"]))
    for tool in tools["openai-responses-strict"]:
        check(f"openai-responses-strict {tool['name']}: strict fixed point",
              lambda t=tool: fixed_point(t["parameters"]))

    # The openai SDK's types accept our tools and results.
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
    from openai.types.responses import FunctionToolParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    chat_tool = pydantic.TypeAdapter(ChatCompletionFunctionToolParam)
    responses_tool = pydantic.TypeAdapter(FunctionToolParam)
    for dialect in ("openai", "openai-strict"):
        for tool in tools[dialect]:
            check(f"{dialect} {tool['function']['name']}: ChatCompletionFunctionToolParam",
                  lambda t=tool: chat_tool.validate_python(t, strict=True))
    for dialect in ("openai-responses", "openai-responses-strict"):
        for tool in tools[dialect]:
            check(f"{dialect} {tool['name']}: FunctionToolParam",
                  lambda t=tool: responses_tool.validate_python(t, strict=True))
    tool_message = pydantic.TypeAdapter(ChatCompletionToolMessageParam)
    for result in results["openai"]:
        check("openai result: ChatCompletionToolMessageParam", lambda r=result: tool_message.validate_python(r, strict=True))
    call_output = pydantic.TypeAdapter(FunctionCallOutput)
    for result in results["openai-responses"]:
        check("openai-responses result: FunctionCallOutput", lambda r=result: call_output.validate_python(r, strict=True))

    # The anthropic SDK's types accept our tools and results.
    from anthropic.types import ToolParam, ToolResultBlockParam

    tool_param = pydantic.TypeAdapter(ToolParam)
    for dialect in ("anthropic", "anthropic-strict"):
        for tool in tools[dialect]:
            check(f"{dialect} {tool['name']}: ToolParam", lambda t=tool: tool_param.validate_python(t, strict=True))
    result_block = pydantic.TypeAdapter(ToolResultBlockParam)
    for result in results["anthropic"]:
        check("anthropic result: ToolResultBlockParam", lambda r=result: result_block.validate_python(r, strict=True))

    # Gemini: the google-genai models forbid unknown fields.
    from google.genai import types as genai

    for decl in tools["gemini"]["functionDeclarations"]:
        check(f"gemini {decl['name']}: FunctionDeclaration", lambda d=decl: genai.FunctionDeclaration.model_validate(d))
    check("gemini: Tool", lambda: genai.Tool.model_validate(tools["gemini"]))
    for part in results["gemini"]:
        check("gemini result: Part", lambda p=part: genai.Part.model_validate(p))

    # Whole turns: the conversation of the next request (the user's message, the model's
    # response, the messages a turn produced) is what each SDK's request types take.
    turns = bundle["turns"]
    from typing import List

    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputItemParam

    turn = turns["openai"]
    conversation = [{"role": "user", "content": "Forecast for Paris?"},
                    turn["response"]["choices"][0]["message"], *turn["messages"]]
    chat_messages = pydantic.TypeAdapter(List[ChatCompletionMessageParam])
    check("openai turn: list[ChatCompletionMessageParam]",
          lambda: chat_messages.validate_python(conversation, strict=True))
    one_message = pydantic.TypeAdapter(ChatCompletionMessageParam)
    for message in turn["messages"]:
        check("openai turn message: ChatCompletionMessageParam",
              lambda m=message: one_message.validate_python(m, strict=True))
        check("openai turn message is a tool message",
              lambda m=message: tool_message.validate_python(m, strict=True))

    turn = turns["openai-responses"]
    items = [{"role": "user", "content": "Forecast for Paris?"}, *turn["response"]["output"], *turn["messages"]]
    input_items = pydantic.TypeAdapter(List[ResponseInputItemParam])
    check("openai-responses turn: list[ResponseInputItemParam]",
          lambda: input_items.validate_python(items, strict=True))
    for item in turn["messages"]:
        check("openai-responses turn item: FunctionCallOutput",
              lambda i=item: call_output.validate_python(i, strict=True))

    from anthropic.types import MessageParam

    turn = turns["anthropic"]
    if len(turn["messages"]) != 1:
        failures.append(f"anthropic turn: {len(turn['messages'])} messages, not one user message")
    response = turn["response"]
    conversation = [{"role": "user", "content": "Forecast for Paris?"},
                    {"role": "assistant", "content": response["content"]}, *turn["messages"]]
    message_params = pydantic.TypeAdapter(List[MessageParam])
    check("anthropic turn: list[MessageParam]",
          lambda: message_params.validate_python(conversation, strict=True))
    for message in turn["messages"]:
        check("anthropic turn message: MessageParam",
              lambda m=message: pydantic.TypeAdapter(MessageParam).validate_python(m, strict=True))

    turn = turns["gemini"]
    contents = [{"role": "user", "parts": [{"text": "Forecast for Paris?"}]},
                turn["response"]["candidates"][0]["content"], *turn["messages"]]
    for content in contents:
        check("gemini turn: Content", lambda c=content: genai.Content.model_validate(c))
    check("gemini turn: one user content with every functionResponse",
          lambda: len(turn["messages"]) == 1 and len(turn["messages"][0]["parts"]) == 2 or (_ for _ in ()).throw(AssertionError(turn["messages"])))

    # Trimmed conversations (older results shown as previews) are still each SDK's request
    # conversation: every call with its result.
    # Conversations the loop sent: a trimmed run's, and a run's that waited on a task.
    for kind in ("trimmed", "tasked"):
        runs = bundle[kind]
        check(f"openai {kind}: list[ChatCompletionMessageParam]",
              lambda r=runs: chat_messages.validate_python(r["openai"], strict=True))
        check(f"openai-responses {kind}: list[ResponseInputItemParam]",
              lambda r=runs: input_items.validate_python(r["openai-responses"], strict=True))
        check(f"anthropic {kind}: list[MessageParam]",
              lambda r=runs: message_params.validate_python(r["anthropic"], strict=True))
        for content in runs["gemini"]:
            check(f"gemini {kind}: Content", lambda c=content: genai.Content.model_validate(c))

    # The streams tests/streaming.rs assembles calls from are each provider's own event types.
    def stream_events(name):
        with open(f"{bundle['streams']}/{name}", encoding="utf-8") as f:
            return [json.loads(line[6:]) for line in f if line.startswith("data: ") and line.strip() != "data: [DONE]"]

    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    for name in ["openai_chat.sse", "checked_openai_chat.sse"]:
        for chunk in stream_events(name):
            check(f"{name}: ChatCompletionChunk", lambda c=chunk: ChatCompletionChunk.model_validate(c, strict=True))
    response_event = pydantic.TypeAdapter(ResponseStreamEvent)
    for name in ["openai_responses.sse", "checked_openai_responses.sse"]:
        for event in stream_events(name):
            check(f"{name} {event['type']}: ResponseStreamEvent",
                  lambda e=event: response_event.validate_python(e, strict=True))
    anthropic_event = pydantic.TypeAdapter(RawMessageStreamEvent)
    for name in ["anthropic.sse", "checked_anthropic.sse"]:
        for event in stream_events(name):
            if event["type"] == "ping":
                continue  # documented keep-alive, not a message event
            check(f"{name} {event['type']}: RawMessageStreamEvent",
                  lambda e=event: anthropic_event.validate_python(e, strict=True))
    for name in ["gemini.sse", "checked_gemini.sse"]:
        for chunk in stream_events(name):
            check(f"{name}: GenerateContentResponse", lambda c=chunk: genai.GenerateContentResponse.model_validate(c))

    # Tool blocks: the request fields around the tools, as each SDK's request type takes them.
    blocks = bundle["blocks"]
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from google.genai import types as genai_types

    chat_request = pydantic.TypeAdapter(CompletionCreateParamsNonStreaming)
    responses_request = pydantic.TypeAdapter(ResponseCreateParamsNonStreaming)
    anthropic_request = pydantic.TypeAdapter(MessageCreateParamsNonStreaming)

    def exact(fields, allowed):
        extra = set(fields) - set(allowed)
        if extra:
            raise AssertionError(f"unexpected request fields {sorted(extra)}")

    for i, fields in enumerate(blocks["openai"]):
        check(f"openai block {i}: CompletionCreateParams", lambda f=fields: (
            exact(f, ["tools", "tool_choice", "parallel_tool_calls"]),
            chat_request.validate_python({"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], **f})))
    for i, fields in enumerate(blocks["openai-responses"]):
        check(f"openai-responses block {i}: ResponseCreateParams", lambda f=fields: (
            exact(f, ["tools", "tool_choice", "parallel_tool_calls"]),
            responses_request.validate_python({"model": "gpt-4.1", "input": "hi", **f})))
    for i, fields in enumerate(blocks["anthropic"]):
        check(f"anthropic block {i}: MessageCreateParams", lambda f=fields: (
            exact(f, ["tools", "tool_choice"]),
            anthropic_request.validate_python({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], **f})))
    def gemini_mode(fields):
        # The SDK's enum takes any string (with a warning): the mode is checked by name.
        mode = fields.get("toolConfig", {}).get("functionCallingConfig", {}).get("mode", "AUTO")
        if mode not in genai_types.FunctionCallingConfigMode.__members__:
            raise AssertionError(f"{mode} is not a FunctionCallingConfigMode")

    for i, fields in enumerate(blocks["gemini"]):
        check(f"gemini block {i}: GenerateContentConfig", lambda f=fields: (
            exact(f, ["tools", "toolConfig"]),
            gemini_mode(f),
            genai_types.GenerateContentConfig.model_validate(f)))

    # Hosted tools: the whole request passes the provider's request type (Anthropic's beta
    # request for the beta tools), each entry has only the keys its own tool type declares,
    # and the beta headers name features the SDK knows.
    import typing

    from openai.types.responses import (ComputerToolParam, FileSearchToolParam,
                                        WebSearchToolParam)
    from openai.types.responses.tool_param import CodeInterpreter, Mcp
    from anthropic.types import (CodeExecutionTool20260521Param, WebFetchTool20260318Param,
                                 WebSearchTool20260318Param)
    from anthropic.types.beta import (BetaMCPToolsetParam, BetaRequestMCPServerURLDefinitionParam,
                                      BetaToolComputerUse20251124Param)
    from anthropic.types.beta.message_create_params import \
        MessageCreateParamsNonStreaming as BetaMessageCreateParamsNonStreaming
    from anthropic.types.anthropic_beta_param import AnthropicBetaParam

    beta_request = pydantic.TypeAdapter(BetaMessageCreateParamsNonStreaming)
    openai_hosted = {"web_search": WebSearchToolParam, "file_search": FileSearchToolParam,
                     "code_interpreter": CodeInterpreter, "computer": ComputerToolParam, "mcp": Mcp}
    anthropic_hosted = {"web_search_20260318": WebSearchTool20260318Param,
                        "web_fetch_20260318": WebFetchTool20260318Param,
                        "code_execution_20260521": CodeExecutionTool20260521Param,
                        "computer_20251124": BetaToolComputerUse20251124Param,
                        "mcp_toolset": BetaMCPToolsetParam}
    known_betas = set(typing.get_args(typing.get_args(AnthropicBetaParam)[1]))

    def keys_within(entry, typed):
        declared = set(typed.__required_keys__) | set(typed.__optional_keys__)
        extra = set(entry) - declared
        if extra:
            raise AssertionError(f"{sorted(extra)} are not keys of {typed.__name__}")
        pydantic.TypeAdapter(typed).validate_python(entry)

    for i, made in enumerate(bundle["hosted"]):
        fields, headers, dialect = made["fields"], made["headers"], made["dialect"]
        label = f"hosted {i} ({dialect})"
        hosted_entries = [t for t in fields["tools"] if t.get("type") not in (None, "function")]
        if dialect == "openai-responses":
            check(f"{label}: ResponseCreateParams", lambda f=fields: (
                exact(f, ["tools", "tool_choice", "parallel_tool_calls"]),
                responses_request.validate_python({"model": "gpt-5", "input": "hi", **f})))
            for entry in hosted_entries:
                check(f"{label} {entry['type']}: its tool type",
                      lambda e=entry: keys_within(e, openai_hosted[e["type"]]))
        elif dialect == "anthropic":
            beta = bool(headers)
            adapter = beta_request if beta else anthropic_request
            check(f"{label}: {'Beta' if beta else ''}MessageCreateParams", lambda f=fields, a=adapter: (
                exact(f, ["tools", "tool_choice", "mcp_servers"]),
                a.validate_python({"model": "claude-sonnet-4-5", "max_tokens": 64,
                                   "messages": [{"role": "user", "content": "hi"}], **f})))
            for entry in hosted_entries:
                check(f"{label} {entry['type']}: its tool type",
                      lambda e=entry: keys_within(e, anthropic_hosted[e["type"]]))
            for server in fields.get("mcp_servers", []):
                check(f"{label} mcp_servers: BetaRequestMCPServerURLDefinitionParam",
                      lambda s=server: keys_within(s, BetaRequestMCPServerURLDefinitionParam))
            for name, value in headers:
                def known(v=value, n=name):
                    if n != "anthropic-beta":
                        raise AssertionError(f"unexpected header {n}")
                    unknown = [b for b in v.split(",") if b not in known_betas]
                    if unknown:
                        raise AssertionError(f"betas the SDK does not know: {unknown}")
                check(f"{label} header {name}", known)
        else:
            def strict_gemini(f=fields):
                exact(f, ["tools", "toolConfig"])
                config = genai_types.GenerateContentConfig.model_validate(f)
                # The SDK keeps unknown keys silently: each tool must come back whole.
                for sent, read in zip(f["tools"], config.tools):
                    back = read.model_dump(by_alias=True, exclude_none=True)
                    if set(sent) != set(back):
                        raise AssertionError(f"{sorted(sent)} read back as {sorted(back)}")
                if not config.tool_config.include_server_side_tool_invocations:
                    raise AssertionError("includeServerSideToolInvocations is not set")
            check(f"{label}: GenerateContentConfig", strict_gemini)

    # Token counts: OpenAI's published rules (its cookbook "How to count tokens with
    # tiktoken", gpt-4o constants) over o200k from bpe-openai, a tokenizer that carries its
    # data; nested schemas, which the rules do not reach, add their JSON's tokens.
    import bpe_openai

    o200k = bpe_openai.get_encoding("o200k_base")

    def count(text):
        return len(o200k.encode_ordinary(text))

    def compact(value):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def openai_function(tool):
        function = tool["function"]
        n = 7 + count(function["name"] + ":" + function.get("description", "").removesuffix("."))
        properties = function.get("parameters", {}).get("properties", {})
        if properties:
            n += 3
            for key, schema in properties.items():
                n += 3
                if "enum" in schema:
                    n -= 3
                    for item in schema["enum"]:
                        n += 3 + count(item if isinstance(item, str) else compact(item))
                kind = schema.get("type", "")
                kind = kind if isinstance(kind, str) else compact(kind)
                n += count(f"{key}:{kind}:{schema.get('description', '').removesuffix('.')}")
                for nested in ("properties", "items", "anyOf", "oneOf", "allOf", "$defs", "prefixItems"):
                    if nested in schema:
                        n += count(compact(schema[nested]))
        return n

    for tool, ours in zip(bundle["tokens"]["tools"], bundle["tokens"]["counts"]):
        def same(t=tool, o=ours):
            theirs = openai_function(t)
            if theirs != o:
                raise AssertionError(f"bpe-openai counts {theirs}, toolsmith {o}")
        check(f"tokens of {tool['function']['name']}: OpenAI rules over bpe-openai's o200k", same)

    # The cookbook adds `func_end` (12) once, after its loop over the functions.
    def same_total():
        theirs = sum(openai_function(t) for t in bundle["tokens"]["tools"]) + 12
        if theirs != bundle["tokens"]["total"]:
            raise AssertionError(f"bpe-openai counts {theirs}, toolsmith {bundle['tokens']['total']}")
    check("tokens of the block: each function, and 12 to close them once", same_total)

    # MCP: the wire schema and the SDK's models.
    wire = json.load(open(bundle["mcp_schema"], encoding="utf-8"))

    def wire_check(definition, value):
        validator = Draft202012Validator({"$schema": wire["$schema"], "$defs": wire["$defs"], "$ref": f"#/$defs/{definition}"})
        errors = [f"{e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(value)]
        if errors:
            raise AssertionError("; ".join(errors[:5]))

    import mcp.types as mcp_types

    check("mcp tools/list: ListToolsResult (wire schema)", lambda: wire_check("ListToolsResult", tools["mcp"]))
    check("mcp tools/list: ListToolsResult (SDK)", lambda: mcp_types.ListToolsResult.model_validate(tools["mcp"]))
    outputs = {t["name"]: t.get("outputSchema") for t in tools["mcp"]["tools"]}
    for result in results["mcp"]:
        check("mcp result: CallToolResult (wire schema)", lambda r=result: wire_check("CallToolResult", r["result"]))
        check("mcp result: CallToolResult (SDK)", lambda r=result: mcp_types.CallToolResult.model_validate(r["result"]))
        schema = outputs.get(result["tool"])
        if schema is not None and not result["result"].get("isError"):
            check(f"mcp result of {result['tool']}: structuredContent matches outputSchema",
                  lambda r=result, s=schema: Draft202012Validator(s).validate(r["result"]["structuredContent"]))

    return report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
