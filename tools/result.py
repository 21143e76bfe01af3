"""The result every tool call produces (PROTOCOL.md: ToolResult)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Attachment:
    mime: str
    url: str  # a data: URL
    filename: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"type": "file", "mime": self.mime, "url": self.url}
        if self.filename is not None:
            wire["filename"] = self.filename
        return wire


@dataclass
class ToolResult:
    title: str
    output: str
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "output": self.output,
            "metadata": self.metadata,
            "attachments": [a.to_wire() for a in self.attachments],
            "isError": self.is_error,
        }
