"""A name as a case-folding file system reads it: which new names the supervisor
refuses to make (``creations``) is decided on this folded form, so ``.GIT`` or
``.vs`` + U+200C + ``code`` in a ``chattr +F`` folder (ext4) or on vfat is refused
like ``.git`` or ``.vscode``.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import re
import unicodedata

# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties): a case-folding file
# system may ignore them, and "." + U+200C + "git" would then be ".git".
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def folded(name: bytes) -> str | None:
    """``name`` folded as a case-insensitive folder would compare it; None for bytes
    that are not UTF-8 (stored opaque: never folded onto another name)."""
    if name.isascii():
        return name.decode("ascii").lower()
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return None
    once = unicodedata.normalize("NFD", _IGNORABLE.sub("", text)).casefold()
    return unicodedata.normalize("NFD", once)


def is_repository_name(name: bytes) -> bool:
    """Whether git could find a repository by this name: ``.git``, in any case (a
    case-folding folder: ext4's ``chattr +F``, vfat) and with ignorable code points."""
    return folded(name) == ".git"
