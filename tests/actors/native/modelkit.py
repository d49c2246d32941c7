"""Helpers for the model-adapter tests: configs aimed at the fake server, requests, wire views.

The adapters are asyncio code; each test drives them with ``run`` (``asyncio.run`` under a hard
timeout) while ``tests.fakes.model_thread.ServerThread`` serves the fake APIs from a trio thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from actors.native.models import ProviderConfig, ProviderKind, build_model, close_model
from tests.fakes.model_thread import ServerThread

KINDS: list[ProviderKind] = ["openai", "openai-chat", "anthropic", "gemini"]
T = TypeVar("T")

WRITE = types.FunctionDeclaration(
    name="write", description="Write a file.",
    parameters=types.Schema(type="OBJECT", required=["path", "content"], properties={
        "path": types.Schema(type="STRING"), "content": types.Schema(type="STRING")}))


def config_for(kind: ProviderKind, srv: ServerThread, *, key: str = "sk-test-123456",
               **fields: Any) -> ProviderConfig:
    """A config for ``kind`` aimed at the fake server (OpenAI-style base URLs end in /v1)."""
    base = f"{srv.url}/v1" if kind.startswith("openai") else srv.url
    fields.setdefault("retry_backoff", 0.01)
    return ProviderConfig(kind=kind, provider=kind, model="model-1", base_url=base, api_key=key,
                          **fields)


def run(make: Callable[[], Awaitable[T]], timeout: float = 20.0) -> T:
    """Run one asyncio coroutine to completion under a hard timeout."""
    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await make()

    return asyncio.run(bounded())


def request(*contents: types.Content, system: str = "Be brief.") -> LlmRequest:
    """A request with the ``write`` tool declared, as ADK builds one."""
    return LlmRequest(model="model-1", contents=list(contents), config=types.GenerateContentConfig(
        system_instruction=system, tools=[types.Tool(function_declarations=[WRITE])]))


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def tool_result(call: types.FunctionCall, result: str) -> types.Content:
    """The user content ADK sends after running ``call``."""
    return types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        id=call.id, name=call.name, response={"result": result}))])


async def collect(llm: BaseLlm, req: LlmRequest, *, stream: bool = True) -> list[LlmResponse]:
    """Every response of one call, then the model's connections closed."""
    try:
        return [r async for r in llm.generate_content_async(req, stream=stream)]
    finally:
        await close_model(llm)


async def one_call(config: ProviderConfig, req: LlmRequest,
                   stream: bool = True) -> list[LlmResponse]:
    """``collect`` on a freshly built model."""
    return await collect(build_model(config), req, stream=stream)


async def aiter_list(items: AsyncIterator[T]) -> list[T]:
    return [item async for item in items]


def texts(responses: list[LlmResponse], *, thought: bool = False) -> list[str]:
    """The text of each partial response's parts of one kind (thought or not)."""
    return [p.text or "" for r in responses if r.partial and r.content
            for p in r.content.parts or [] if bool(p.thought) == thought and p.text is not None]


def final_of(responses: list[LlmResponse]) -> LlmResponse:
    finals = [r for r in responses if not r.partial]
    assert len(finals) == 1, responses
    return finals[0]


def wire_calls(kind: ProviderKind, body: Any) -> tuple[list[tuple[str, dict[str, Any]]],
                                                       list[tuple[str, str]]]:
    """From a recorded request body: the model's tool calls ``(name, args)`` and the tool
    results ``(name or call id, text)``, in the API's own shapes; ids are checked to match."""
    calls: list[tuple[str, dict[str, Any]]] = []
    results: list[tuple[str, str]] = []
    ids: dict[str, str] = {}
    if kind == "openai":
        for item in body["input"]:
            if item.get("type") == "function_call":
                ids[item["call_id"]] = item["name"]
                calls.append((item["name"], json.loads(item["arguments"])))
            elif item.get("type") == "function_call_output":
                results.append((ids[item["call_id"]], item["output"]))
    elif kind == "openai-chat":
        for message in body["messages"]:
            for call in message.get("tool_calls") or []:
                ids[call["id"]] = call["function"]["name"]
                calls.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
            if message["role"] == "tool":
                results.append((ids[message["tool_call_id"]], message["content"]))
    elif kind == "anthropic":
        for message in body["messages"]:
            for block in message["content"]:
                if block["type"] == "tool_use":
                    ids[block["id"]] = block["name"]
                    calls.append((block["name"], block["input"]))
                elif block["type"] == "tool_result":
                    results.append((ids[block["tool_use_id"]], block["content"]))
    else:
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    calls.append((part["functionCall"]["name"], part["functionCall"]["args"]))
                elif "functionResponse" in part:
                    response = part["functionResponse"]
                    results.append((response["name"], response["response"]["result"]))
    return calls, results


CREDENTIAL_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
