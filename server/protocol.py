"""toolhost's JSON-RPC layer on top of pygls's ``LanguageServerProtocol``.

pygls parses messages inside its own read loop: a malformed body becomes a log
line with no answer, and custom-method params become namedtuples (which rename
keys that are not identifiers, so a tool's arguments could change).  Here
``receive`` takes one framed body and either dispatches it or answers the fault:

======  ==========================================================  ===========
code    when                                                        id
======  ==========================================================  ===========
-32700  bad framing, a body that is not JSON, or JSON too deep to    null
        parse (past Python's recursion limit)
-32600  JSON that is not a request object (an array, no method...)  the request's, else null
        or one nested deeper than ``MAX_DEPTH``
-32002  a request before ``initialize`` (notifications are dropped)  the request's
-32602  params that do not fit the method                           the request's
-32601  an unknown method (pygls)                                   the request's
-32800  a request cancelled with ``$/cancelRequest``                the request's
-32603  an unexpected exception in a handler (logged, not shown)    the request's
======  ==========================================================  ===========

Custom methods keep their params as plain JSON values.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import json
import logging
import re
import sys
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import Future
from functools import partial
from typing import Any, cast

import orjson
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcParseError,
    JsonRpcRequestCancelled,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)

from server import initialize

log = logging.getLogger("toolhost.protocol")

PROTOCOL_VERSION = 1
# Deeper JSON is refused before anything walks it (cattrs, pydantic and json.dumps
# all recurse); real messages stay far below this.
MAX_DEPTH = 64
_PLAIN = (dict, list, str, int, float, bool, type(None))
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_DIGITS = b"0123456789"


class ToolhostProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids = itertools.count(1)
        self._outgoing: set[str] = set()  # ids of our requests still awaiting the client
        self._async_handlers: dict[Any, bool] = {}
        self._sends: set[asyncio.Future[Any]] = set()
        self._initialize_seen = False
        self._request_loop: asyncio.AbstractEventLoop | None = None
        self._eager_checks: dict[str, Callable[[Any], bool]] = {}

    # -- intake ---------------------------------------------------------------

    def receive(self, body: bytes) -> None:
        """Dispatch one message body; anything malformed is answered, never fatal."""
        try:
            data = parse_body(body)
        except RecursionError:
            self.send_error(
                None,
                JsonRpcParseError(
                    f"Parse error: the body is nested too deeply (at most {MAX_DEPTH} levels)"
                ),
            )
            return
        except ValueError as error:  # includes UnicodeDecodeError
            self.send_error(None, JsonRpcParseError(f"Parse error: the body is not JSON ({error})"))
            return
        problem = envelope_problem(data)
        if (
            problem is None
            and could_nest_deeper(body, MAX_DEPTH)
            and nested_deeper_than(data, MAX_DEPTH)
        ):
            problem = f"the message is nested too deeply (at most {MAX_DEPTH} levels)"
        if problem is not None:
            self.send_error(request_id(data), JsonRpcInvalidRequest(f"Invalid request: {problem}"))
            return
        method = data.get("method")
        if method is not None and not self._lifecycle_allows(data):
            return
        if method is not None and "id" in data:
            if self._shutdown and method != types.EXIT:
                self.send_error(data["id"], JsonRpcInvalidRequest("The server is shutting down."))
                return
            if self.get_message_type(method) is None:
                self._handle_custom_request(data["id"], method, data.get("params"))
                return
        try:
            message = self.structure_message(data)
        except JsonRpcException as error:
            self._structure_failed(data, error)
            return
        try:
            self.handle_message(message)
        except Exception:  # a fault in one message must not end the session
            log.exception("failed to handle %s", data.get("method") or "a response")

    def _lifecycle_allows(self, data: dict[str, Any]) -> bool:
        """LSP's rule before ``initialize``: a request is answered -32002 (a ``shutdown``
        too, so that it cannot end a session that never began), a notification other
        than ``exit`` is dropped.  True when the message may be dispatched."""
        method = data["method"]
        if method == types.INITIALIZE and "id" in data:
            if self._initialize_seen:
                self.send_error(
                    data["id"], JsonRpcInvalidRequest("initialize may be sent only once.")
                )
                return False
            return True  # lsp_initialize marks it seen once its params are understood
        if self._initialize_seen or method == types.EXIT:
            return True
        if "id" in data:
            self.send_error(
                data["id"],
                JsonRpcServerNotInitialized(
                    f"The server is not initialized yet: send initialize before {method}."
                ),
            )
        else:
            log.info("dropped %s: it came before initialize", method)
        return False

    def _handle_custom_request(self, msg_id: Any, method: str, params: Any) -> None:
        """toolhost's own methods, without pygls's per-message machinery.

        An async handler runs as a task registered under the request id, so
        ``$/cancelRequest`` can cancel it; the task answers for itself, and a cancelled
        one is answered once it has stopped (``_cancel``).
        """
        handler = self.fm.features.get(method)
        if handler is None:
            self.send_error(msg_id, JsonRpcMethodNotFound.of(method))
            return
        if not self._is_async(handler):
            try:
                result = handler(params)
            except Exception as error:
                self._send_failure(msg_id, error)
            else:
                self._send_response(msg_id, result)
            return
        call = self._answer(msg_id, handler, params)
        if self._may_start_eagerly(method, params):
            self._start_eagerly(msg_id, call)
            return
        task = self._loop_of_requests().create_task(call)
        # pygls types this map as concurrent futures; its own code stores asyncio ones too.
        self._request_futures[msg_id] = cast(Any, task)

    def start_eagerly_when(self, method: str, check: Callable[[Any], bool]) -> None:
        """Calls of ``method`` whose params pass ``check`` take their first step at once,
        in ``receive``, before they have a task (as Python 3.12's eager tasks do): one that
        never waits is answered with no task made and no further turn of the event loop.
        On Python 3.11 such a call has no task of its own until its first real wait
        (``asyncio.current_task()`` is whatever called ``receive``: none on a pipe), so
        ``check`` must pass only calls that do not need one then (``Tool.eager``); 3.12's
        eager tasks give it its own from the start."""
        self._eager_checks[method] = check

    def _may_start_eagerly(self, method: str, params: Any) -> bool:
        check = self._eager_checks.get(method)
        if check is None:
            return False
        try:
            return check(params)
        except Exception:  # the handler meets the same fault and answers it, in a task
            return False

    def _start_eagerly(self, msg_id: Any, call: Coroutine[Any, Any, None]) -> None:
        # In a context of its own, as a task would run it; registered first, so a call
        # that ends cancelled in this very step is still answered (_answer_cancelled_once).
        context = contextvars.copy_context()
        self._request_futures[msg_id] = cast(Any, _STARTING)
        if sys.version_info >= (3, 12):  # eager tasks: the step runs in its current task
            task = asyncio.Task(
                call, loop=self._loop_of_requests(), context=context, eager_start=True
            )
            if not task.done():
                self._request_futures[msg_id] = cast(Any, task)
            return
        try:
            awaited = context.run(call.send, None)
        except (StopIteration, asyncio.CancelledError):
            return  # answered, by _answer
        # It waits: a task takes it on from the future it is waiting for.
        task = self._loop_of_requests().create_task(_Resumed(call, awaited), context=context)
        self._request_futures[msg_id] = cast(Any, task)

    def _loop_of_requests(self) -> asyncio.AbstractEventLoop:
        """The loop messages arrive on, looked up once: on Python 3.11 every
        ``get_running_loop`` makes a getpid system call."""
        loop = self._request_loop
        if loop is None or loop.is_closed():
            loop = self._request_loop = asyncio.get_running_loop()
        return loop

    def _is_async(self, handler: Any) -> bool:
        known = self._async_handlers.get(handler)
        if known is None:
            known = self._async_handlers[handler] = asyncio.iscoroutinefunction(handler)
        return known

    async def _answer(self, msg_id: Any, handler: Any, params: Any) -> None:
        try:
            result = await handler(params)
        except asyncio.CancelledError:  # $/cancelRequest, or a cancel from inside the call
            self._answer_cancelled_once(msg_id)
            raise
        except Exception as error:
            self._request_futures.pop(msg_id, None)
            self._send_failure(msg_id, error)
            return
        self._request_futures.pop(msg_id, None)
        self._send_response(msg_id, result)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        """``$/cancelRequest``: a running call of ours is cancelled, and answered -32800
        once it has stopped; anything else as pygls does it."""
        task = self._request_futures.get(msg_id)
        if isinstance(task, asyncio.Task):
            self._cancel(msg_id, task)
            return
        super()._handle_cancel_notification(msg_id)

    def _cancel(self, msg_id: Any, task: asyncio.Task[None]) -> None:
        # A task cancelled before it started never reaches _answer's handler, so it is
        # answered from a done callback, added only now: a call that ends normally then
        # costs no extra turn of the event loop.
        if not task.done():
            task.add_done_callback(partial(self._answer_cancelled, msg_id))
            task.cancel()

    def _answer_cancelled(self, msg_id: Any, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            self._answer_cancelled_once(msg_id)

    def _answer_cancelled_once(self, msg_id: Any) -> None:
        """-32800 for a request not answered yet (it is still in the request map)."""
        if self._request_futures.pop(msg_id, None) is not None:
            cancelled = JsonRpcRequestCancelled(f"Request {msg_id!r} was cancelled")
            self._send_response(msg_id, error=cancelled.to_response_error())

    def _send_failure(self, msg_id: Any, error: Exception) -> None:
        if isinstance(error, JsonRpcException):
            log.warning("request %r: %s", msg_id, error.message)
            self._send_response(msg_id, error=error.to_response_error())
        else:
            log.error("request %r failed", msg_id, exc_info=error)
            internal = JsonRpcInternalError(f"Internal error: {type(error).__name__}: {error}")
            self._send_response(msg_id, error=internal.to_response_error())

    def framing_error(self, message: str) -> None:
        self.send_error(None, JsonRpcParseError(f"Parse error: {message}"))

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Typed LSP messages via lsprotocol; custom methods and results stay plain JSON."""
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        if method is not None:
            message_type = self.get_message_type(method)
            if message_type is not None:
                return self._structure(data, message_type, method)
            if "id" in data:
                return JsonRPCRequestMessage(
                    id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
                )
            return JsonRPCNotification(
                method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
            )
        if "error" in data:
            return self._structure(data, types.ResponseErrorMessage, "a response")
        result_type = self._result_types.pop(data["id"], None)
        if result_type is not None:
            return self._structure(data, result_type, "a response")
        return JsonRPCResponseMessage(
            id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result")
        )

    def _structure(self, data: dict[str, Any], message_type: type, what: str) -> Any:
        try:
            return self._converter.structure(data, message_type)
        except Exception as error:
            raise JsonRpcInvalidParams(f"Invalid params for {what}: {describe(error)}") from error

    def _structure_failed(self, data: dict[str, Any], error: JsonRpcException) -> None:
        if "method" in data:
            if "id" in data:
                self.send_error(data["id"], error)
            else:
                log.warning("ignored notification %s: %s", data["method"], error.message)
            return
        # A malformed answer to one of our requests: fail it rather than wait forever.
        future = self._request_futures.pop(data["id"], None)
        log.warning("malformed response %r from the client: %s", data["id"], error.message)
        if future is not None and not future.done():
            future.set_exception(error)

    # -- answers --------------------------------------------------------------

    def send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        log.warning("answering %s with %s: %s", msg_id, error.code, error.message)
        self._send_data(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": error.code, "message": error.message},
            }
        )

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        """pygls's version, minus the traceback log for expected protocol faults."""
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            cancelled = JsonRpcRequestCancelled(f"Request {msg_id!r} was cancelled")
            self._send_response(msg_id, error=cancelled.to_response_error())
            return
        error = future.exception()
        if error is None:
            self._send_response(msg_id, result=future.result())
        else:
            self._send_failure(msg_id, error)  # type: ignore[arg-type]

    def _send_response(
        self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None
    ) -> None:
        if error is not None:
            response = {"jsonrpc": "2.0", "id": msg_id, "error": self._converter.unstructure(error)}
        else:
            if not isinstance(result, _PLAIN):
                result = self._converter.unstructure(result)
            response = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        self._send_data(response)

    def _send_data(self, data: Any) -> None:
        if self.writer is None:
            log.error("no transport to send a message on")
            return
        try:
            body = encode_body(data, self._serialize_message)
            frame = b"Content-Length: %d\r\n\r\n%b" % (len(body), body)
            written = self.writer.write(frame if self._include_headers else body)
            if written is not None and inspect.isawaitable(written):  # a websocket send
                task = asyncio.ensure_future(written)
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)
        except Exception:
            log.exception("failed to send a message")

    # -- requests to the client -----------------------------------------------

    def notify(self, method: str, params: Any | None = None) -> None:
        """pygls's, but plain JSON params (a dict) go out as they are: building and
        unstructuring a message object generates its converter code on first use (a
        few ms, for each kind of notification, at start-up)."""
        if isinstance(params, dict):
            self._send_data({"jsonrpc": "2.0", "method": method, "params": params})
            return
        super().notify(method, params)

    def send_request(
        self, method: str, params: Any = None, callback: Any = None, msg_id: Any = None
    ) -> Future[Any]:
        msg_id = msg_id if msg_id is not None else f"toolhost-{next(self._ids)}"
        future = super().send_request(method, params, callback, msg_id)
        self._outgoing.add(msg_id)
        future.add_done_callback(lambda _: self._outgoing.discard(msg_id))
        return future

    async def request(self, method: str, params: Any) -> Any:
        """Ask the client; if our caller is cancelled, withdraw the request."""
        msg_id = f"toolhost-{next(self._ids)}"
        future = self.send_request(method, params, msg_id=msg_id)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if self._request_futures.pop(msg_id, None) is not None:
                self._result_types.pop(msg_id, None)
                self.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise

    async def wind_down(self, timeout: float) -> None:
        """At end of input: nobody will answer our requests; let running calls finish."""
        for msg_id in list(self._outgoing):
            future = self._request_futures.pop(msg_id, None)
            if future is not None and not future.done():
                future.set_exception(ConnectionError("the client closed the connection"))
        running: dict[asyncio.Future[Any], Any] = {
            cast(Any, call): msg_id
            for msg_id, call in self._request_futures.items()
            if isinstance(call, asyncio.Future)
        }
        if running:
            _, pending = await asyncio.wait(running, timeout=timeout)
            for call in pending:
                if isinstance(call, asyncio.Task):
                    self._cancel(running[call], call)
                else:
                    call.cancel()
            if pending:  # let the cancelled calls answer -32800 before we leave
                await asyncio.wait(pending, timeout=1.0)

    # -- lifecycle ------------------------------------------------------------

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(  # type: ignore[override]  # the result as JSON, sent as it is
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, dict[str, Any]]:
        self._initialize_seen = True
        # pygls's own step, the answer written without cattrs (server.initialize).
        experimental = {"toolhost": {"protocol": PROTOCOL_VERSION}}
        return (yield from initialize.answer(self, params, experimental))


_STARTING = object()  # in the request map while an eager call takes its first step


class _Resumed(Coroutine[Any, Any, None]):
    """A call that took its first step eagerly and now waits for ``awaited``, as a
    coroutine a task can run: the task's first step gets ``awaited`` to wait for, and
    everything the task sends or throws after that goes on to the call."""

    def __init__(self, call: Coroutine[Any, Any, None], awaited: Any) -> None:
        self._call = call
        self._awaited: Any = awaited
        self._first = True

    def send(self, value: Any) -> Any:
        if self._first:
            self._first = False
            return self._awaited
        return self._call.send(value)

    def throw(self, error: Any, *rest: Any) -> Any:
        if self._first:  # cancelled before the task's first step: stop what it waits for
            self._first = False
            cancel = getattr(self._awaited, "cancel", None)
            if cancel is not None:
                cancel()
        return self._call.throw(error, *rest)

    def close(self) -> None:
        self._call.close()

    def __await__(self) -> Generator[Any, Any, None]:
        raise TypeError("an eagerly started call is run by its task, never awaited")


def parse_body(body: bytes) -> Any:
    """The JSON value of ``body``, exactly as ``json.loads`` reads it.

    orjson parses what it accepts ten times faster; what it refuses (NaN, lone surrogates,
    UTF-16 text, deep nesting) goes to the standard library, whose answer (a value, or
    the error reported to the client) is the one kept. orjson reads an integer past 64
    bits as a float, so a body with a run of 19 digits anywhere goes there too.
    """
    # The run is looked for only in a body holding 19 digits at all: one C-level pass
    # (the search costs ~130 instructions a byte; a tools/execute body rarely has 19).
    if len(body) - len(body.translate(None, _DIGITS)) >= 19 and _LONG_DIGITS.search(body):
        return json.loads(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


def encode_body(data: Any, default: Any) -> bytes:
    """``data`` as JSON bytes: orjson, else the standard library for what orjson refuses
    (integers past 64 bits, lone surrogates, keys that are not strings)."""
    try:
        return orjson.dumps(data, default=default)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(data, default=default).encode()


def envelope_problem(data: Any) -> str | None:
    """Why ``data`` is not a JSON-RPC 2.0 message, or None."""
    if isinstance(data, list):
        return "batches are not supported; send one JSON object per message"
    if not isinstance(data, dict):
        return f"a message must be a JSON object, got {type(data).__name__}"
    if data.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "id" in data and not valid_id(data["id"]):
        return 'the "id" member must be a string or an integer'
    if "method" in data:
        if not isinstance(data["method"], str):
            return 'the "method" member must be a string'
        return None
    if "id" not in data:
        return 'a message needs a "method" (request or notification) or an "id" (response)'
    if "result" not in data and "error" not in data:
        return 'a response needs a "result" or an "error"'
    return None


def could_nest_deeper(body: bytes, limit: int) -> bool:
    """False when ``body`` has too few brackets to nest past ``limit`` levels: then the
    parsed value need not be walked (two C-level counts instead of a Python loop)."""
    return body.count(b"{") + body.count(b"[") > limit


def nested_deeper_than(value: Any, limit: int) -> bool:
    """True when arrays and objects in ``value`` nest more than ``limit`` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_id(data: Any) -> Any:
    """The id to answer a faulty message with: its own if it has a usable one."""
    if isinstance(data, dict) and "method" in data and valid_id(data.get("id")):
        return data["id"]
    return None


def describe(error: BaseException) -> str:
    """cattrs errors as ``what @ where`` lines, so the message names the field."""
    from cattrs import transform_error
    from cattrs.errors import ClassValidationError

    if isinstance(error, ClassValidationError):
        return "; ".join(transform_error(error, path="$"))
    return str(error)
