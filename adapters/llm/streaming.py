"""A streamed chat completion put back together, chunk by chunk, into the assistant's message."""

from __future__ import annotations

from typing import Any

from skills.llm.agent import ChatMessage, ToolCallMessage


class StreamedAnswer:
    """The chunks of a streamed chat completion, put back together: the text, the tool calls (their
    id and name come in the first delta of each, the arguments in pieces), the usage (last chunk)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.chars = 0

    def add(self, chunk: Any) -> None:
        if chunk.usage is not None:
            self.prompt_tokens = chunk.usage.prompt_tokens or 0
            self.completion_tokens = chunk.usage.completion_tokens or 0
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                self.text.append(delta.content)
                self.chars += len(delta.content)
            for part in delta.tool_calls or []:
                call = self.calls.setdefault(part.index, {"id": "", "name": "", "arguments": []})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["name"] = part.function.name or call["name"]
                    if part.function.arguments:
                        call["arguments"].append(part.function.arguments)
                        self.chars += len(part.function.arguments)

    def progress(self) -> str:
        """What has come so far, as the turn's heartbeat says it."""
        return f"{self.chars} characters received" if self.chars else "waiting for the first token"

    def message(self) -> ChatMessage:
        calls = [ToolCallMessage(id=c["id"] or f"call_{index}", name=c["name"], arguments="".join(c["arguments"]))
                 for index, c in sorted(self.calls.items()) if c["name"]]
        return ChatMessage(role="assistant", content="".join(self.text) or None, tool_calls=calls,
                           prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)
