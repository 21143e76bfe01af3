"""The toolhost sidecar: ``tools`` served over LSP-style JSON-RPC with pygls.

Kept free of imports so that ``toolhost serve`` starts fast; the version is
written here (not read from package metadata, which costs an import) and a test
checks it against the installed distribution.
"""

__version__ = "0.1.0"
