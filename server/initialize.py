"""The ``initialize`` answer, as pygls 2.1 makes it, written out without cattrs.

pygls unstructures the server's capabilities with cattrs, which generates (and
compiles) a converter function for each of the two dozen capability classes on first
use, and it does so twice over in ``lsp_initialize`` (once for a debug log line, once
for the answer): ~60M instructions, about a sixth of a millisecond each, of every
editor's start before its ``initialize`` is answered (bench/README.md, issue 29). The
answer is a handful of fields, so ``plain`` writes them with lsprotocol's own rules
(camelCase names, a field equal to its default left out unless lsprotocol marks it
special, enums by value); tests/wire/test_lifecycle.py holds it to the converter's
output for several clients' capabilities.

``answer`` is pygls's ``LanguageServerProtocol.lsp_initialize`` step for step (the
workspace, the position encoding, the user's handler, the capabilities), returning the
result as plain JSON.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.uris import from_fs_path
from pygls.workspace import Workspace

if TYPE_CHECKING:
    from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("toolhost.server")

_JSON_SCALARS = (str, int, float, bool, type(None))


def answer(
    protocol: LanguageServerProtocol, params: types.InitializeParams, experimental: Any
) -> Generator[Any, Any, dict[str, Any]]:
    """pygls's ``lsp_initialize``, the result as JSON (``experimental``: our own field)."""
    server = protocol._server
    server.process_id = params.process_id
    protocol.client_capabilities = params.capabilities
    position_encoding = ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities)
    root_uri = params.root_uri
    if params.root_path is not None and root_uri is None:
        root_uri = from_fs_path(params.root_path)
    protocol._workspace = Workspace(
        root_uri,
        server._text_document_sync_kind,
        params.workspace_folders or [],
        position_encoding,
    )
    if (user_handler := protocol.fm.features.get(types.INITIALIZE)) is not None:
        yield user_handler, (params,), None
    features = protocol.fm
    capabilities = ServerCapabilitiesBuilder(
        params.capabilities,
        {*features.features, *features.builtin_features},
        features.feature_options,
        list(features.commands),
        server._text_document_sync_kind,
        server._notebook_document_sync,
        position_encoding,
    ).build()  # type: ignore[no-untyped-call]
    capabilities.experimental = experimental
    protocol.server_capabilities = capabilities
    result = types.InitializeResult(capabilities=capabilities, server_info=protocol.server_info)
    try:
        return plain(result)  # type: ignore[no-any-return]
    except TypeError as unknown:  # a kind of value plain does not know: the converter's turn
        log.debug("initialize answered through the converter: %s", unknown)
        return result  # type: ignore[return-value]


def plain(value: Any) -> Any:
    """``value`` as lsprotocol's converter unstructures it, for the kinds of values
    capabilities hold; anything else goes to pygls's converter (``TypeError``)."""
    if isinstance(value, _JSON_SCALARS) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    cls = type(value)
    if not attrs.has(cls):
        raise TypeError(f"not written without cattrs: {cls.__name__}")
    found: dict[str, Any] = {}
    for field in attrs.fields(cls):
        item = getattr(value, field.name)
        if not types.is_special_property(cls, field.name) and _is_default(field, item, value):
            continue
        found[_camel(field.name)] = plain(item)
    return found


def _is_default(field: attrs.Attribute[Any], item: Any, owner: Any) -> bool:
    """cattrs' ``omit_if_default``: equal to the default (a factory's, made anew)."""
    default: Any = field.default
    if default is attrs.NOTHING:
        return False
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory(owner) if default.takes_self else default.factory()
    return bool(item == default)


def _camel(name: str) -> str:
    """lsprotocol's field name on the wire (``_to_camel_case`` in its hooks)."""
    parts = name.removesuffix("_").split("_")
    return parts[0] + "".join(part.title() for part in parts[1:])
