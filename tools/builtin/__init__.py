"""The built-in tools: one module each, named by the tool's id, with its prose in ``<id>.txt``.

``BUILTIN_ORDER`` is the one list of them, in the order the catalogue shows them:
OpenCode's registry order (1.18.33 puts question first and task after write), with
toolhost's extra built-ins (list, multiedit, todoread, lsp) in the places OpenCode's older
releases had them.
"""

BUILTIN_ORDER = (
    "question",
    "bash",
    "read",
    "glob",
    "grep",
    "list",
    "edit",
    "write",
    "multiedit",
    "task",
    "webfetch",
    "todowrite",
    "todoread",
    "websearch",
    "skill",
    "apply_patch",
    "lsp",
)
