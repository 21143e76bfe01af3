"""The params of toolhost's requests, checked: a protocol fault names its field.

Tool arguments are not checked here (the tool's own schema does that and answers
with an ``invalid_arguments`` result); only the envelope around them is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from tools.model import ModelRef


@dataclass(frozen=True)
class ListParams:
    model: ModelRef | None = None
    agent: str | None = None
    session_id: str | None = None


# Not frozen: a frozen dataclass sets each of its fields through object.__setattr__,
# and these are built for every call.
@dataclass(slots=True)
class ExecuteParams:
    tool: str
    args: dict[str, Any]
    session_id: str | None = None
    message_id: str | None = None
    call_id: str | None = None
    agent: str | None = None
    model: ModelRef | None = None
    work_done_token: int | str | None = None
    turn_id: str | None = None


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def model_from_wire(value: Any) -> ModelRef:
    """``{providerID, modelID}`` -> ModelRef; ValueError says what is wrong."""
    if not isinstance(value, dict):
        raise ValueError(f"must be an object {{providerID, modelID}}, got {json_type(value)}")
    provider, model = value.get("providerID"), value.get("modelID")
    for name, field in (("providerID", provider), ("modelID", model)):
        if not isinstance(field, str):
            raise ValueError(f"needs {name} as a string, got {json_type(field)}")
    assert isinstance(provider, str) and isinstance(model, str)
    return ModelRef(provider, model)


def parse_list(raw: Any) -> ListParams:
    params = _object(raw, "tools/list", allow_missing=True)
    return ListParams(
        model=_model(params, "tools/list"),
        agent=_string(params, "agent", "tools/list"),
        session_id=_string(params, "sessionID", "tools/list"),
    )


def parse_execute(raw: Any) -> ExecuteParams:
    method = "tools/execute"
    params = _object(raw, method)
    if "tool" not in params:
        raise _invalid(method, "`tool` is required: the id of the tool to run")
    tool = params["tool"]
    if not isinstance(tool, str):
        raise _invalid(method, f"`tool` must be a string, got {json_type(tool)}")
    if "args" not in params:
        raise _invalid(method, "`args` is required: an object of the tool's arguments")
    args = params["args"]
    if not isinstance(args, dict):
        raise _invalid(method, f"`args` must be an object, got {json_type(args)}")
    token = params.get("workDoneToken")
    if token is not None and not (isinstance(token, str | int) and not isinstance(token, bool)):
        raise _invalid(
            method, f"`workDoneToken` must be a string or an integer, got {json_type(token)}"
        )
    return ExecuteParams(
        tool=tool,
        args=args,
        session_id=_string(params, "sessionID", method),
        message_id=_string(params, "messageID", method),
        call_id=_string(params, "callID", method),
        agent=_string(params, "agent", method),
        model=_model(params, method),
        work_done_token=token,
        turn_id=_string(params, "turnID", method),
    )


def _object(raw: Any, method: str, *, allow_missing: bool = False) -> dict[str, Any]:
    if raw is None and allow_missing:
        return {}
    if not isinstance(raw, dict):
        raise _invalid(method, f"params must be an object, got {json_type(raw)}")
    return raw


def _string(params: dict[str, Any], name: str, method: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise _invalid(method, f"`{name}` must be a string, got {json_type(value)}")
    return value


def _model(params: dict[str, Any], method: str) -> ModelRef | None:
    value = params.get("model")
    if value is None:
        return None
    try:
        return model_from_wire(value)
    except ValueError as error:
        raise _invalid(method, f"`model` {error}") from None


def _invalid(method: str, message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(f"Invalid params for {method}: {message}")
