"""Checks toolsmith's programmatic tool calling JSON with the providers' own SDKs, offline.

Input: the path of a bundle written by tests/programmatic.rs: for OpenAI Responses and
Anthropic, the requests an agent run sent (tools marked callable from a program, the
program's tool, the history with the program's items and the answers into the program),
the responses it read, and a request whose tools are for programs only; and the directory
of the recorded streams. Prints one line per failed check, then a tally; exits 1 on any
failure.
"""

import json
import sys
import typing

import pydantic

from tally import check, report


def only_keys(value, typed_dict):
    """The keys of `value` are all declared by `typed_dict` (pydantic ignores extra keys)."""
    declared = set(typing.get_type_hints(typed_dict))
    extra = set(value) - declared
    if extra:
        raise AssertionError(f"keys {sorted(extra)} are not in {typed_dict.__name__}")


def callers_kept(message):
    for block in message.content:
        if block.type == "tool_use" and block.caller is None:
            raise AssertionError(f"{block.id} lost its caller")


def stream_events(directory, name):
    with open(f"{directory}/{name}", encoding="utf-8") as f:
        return [json.loads(line[6:]) for line in f if line.startswith("data: ")]


def main(path):
    bundle = json.load(open(path, encoding="utf-8"))

    # OpenAI Responses.
    from openai.types.responses import FunctionToolParam, Response, ResponseStreamEvent
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
    from openai.types.responses.response_input_item_param import FunctionCallOutput
    from openai.types.responses.tool_param import ProgrammaticToolCalling

    openai = bundle["openai"]
    create = pydantic.TypeAdapter(ResponseCreateParamsNonStreaming)
    function_tool = pydantic.TypeAdapter(FunctionToolParam)
    output = pydantic.TypeAdapter(FunctionCallOutput)
    for i, body in enumerate(openai["requests"]):
        check(f"openai request {i}: ResponseCreateParams",
              lambda b=body: create.validate_python({"model": "gpt-5.6", **b}))
        for item in body["input"]:
            if item.get("type") == "function_call_output":
                check(f"openai request {i}: answer into the program is a FunctionCallOutput",
                      lambda it=item: (output.validate_python(it, strict=True), only_keys(it, FunctionCallOutput)))
    for fields in [openai["requests"][0], openai["only"]]:
        for tool in fields["tools"]:
            if tool["type"] == "function":
                check(f"openai tool {tool['name']}: FunctionToolParam with allowed_callers and output_schema",
                      lambda t=tool: (function_tool.validate_python(t, strict=True), only_keys(t, FunctionToolParam),
                                      t["allowed_callers"] and t["output_schema"]))
            else:
                check("openai programmatic tool: ProgrammaticToolCalling",
                      lambda t=tool: (pydantic.TypeAdapter(ProgrammaticToolCalling).validate_python(t, strict=True),
                                      only_keys(t, ProgrammaticToolCalling)))
    for i, response in enumerate(openai["responses"]):
        check(f"openai response {i}: Response", lambda r=response: Response.model_validate(r))
    event = pydantic.TypeAdapter(ResponseStreamEvent)
    for e in stream_events(bundle["streams"], "programmatic_openai_responses.sse"):
        check(f"programmatic_openai_responses.sse {e['type']}: ResponseStreamEvent",
              lambda x=e: event.validate_python(x, strict=True))

    # Anthropic.
    from anthropic.types import (CodeExecutionTool20260120Param, Message, RawMessageStreamEvent,
                                 ToolParam, ToolResultBlockParam)
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    anthropic = bundle["anthropic"]
    create = pydantic.TypeAdapter(MessageCreateParamsNonStreaming)
    tool_param = pydantic.TypeAdapter(ToolParam)
    code_execution = pydantic.TypeAdapter(CodeExecutionTool20260120Param)
    result_block = pydantic.TypeAdapter(ToolResultBlockParam)
    for i, body in enumerate(anthropic["requests"]):
        check(f"anthropic request {i}: MessageCreateParams",
              lambda b=body: create.validate_python({"model": "claude-opus-4-7", "max_tokens": 1024, **b}))
        for message in body["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                for block in message["content"]:
                    check(f"anthropic request {i}: answer into the program is a ToolResultBlockParam",
                          lambda b=block: (result_block.validate_python(b, strict=True), only_keys(b, ToolResultBlockParam)))
    for fields in [anthropic["requests"][0], anthropic["only"]]:
        for tool in fields["tools"]:
            if tool.get("type") == "code_execution_20260120":
                check("anthropic code execution: CodeExecutionTool20260120Param",
                      lambda t=tool: (code_execution.validate_python(t, strict=True),
                                      only_keys(t, CodeExecutionTool20260120Param)))
            else:
                check(f"anthropic tool {tool['name']}: ToolParam with allowed_callers",
                      lambda t=tool: (tool_param.validate_python(t, strict=True), only_keys(t, ToolParam),
                                      t["allowed_callers"]))
    for i, response in enumerate(anthropic["responses"]):
        check(f"anthropic response {i}: Message", lambda r=response: Message.model_validate(r))
        check(f"anthropic response {i}: the program's calls keep their caller",
              lambda r=response: callers_kept(Message.model_validate(r)))
    event = pydantic.TypeAdapter(RawMessageStreamEvent)
    # As JSON: strict mode reads the container's expiry from its wire form, an ISO 8601 string.
    for e in stream_events(bundle["streams"], "programmatic_anthropic.sse"):
        check(f"programmatic_anthropic.sse {e['type']}: RawMessageStreamEvent",
              lambda x=e: event.validate_json(json.dumps(x), strict=True))

    return report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
