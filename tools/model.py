"""Which model is calling: a provider and a model id, as OpenCode names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelRef:
    provider_id: str
    model_id: str

    def to_wire(self) -> dict[str, str]:
        return {"providerID": self.provider_id, "modelID": self.model_id}
