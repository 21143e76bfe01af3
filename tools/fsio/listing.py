"""A folder's names, listed again only when the folder has changed.

Every bash call's sandbox plan looks for names in the same few folders: the temp folder
for the ACP relays' folders, the runtime folder for sockets, the home folder for secrets.
The temp folder alone can hold hundreds of entries. Making, removing or renaming a name
in a folder changes its ctime, which no process can set back, so a listing is kept while
the ctime is the one it saw. Timestamps come from a coarse clock, and a name made in the
same tick as an earlier change can leave the ctime as it was. So a listing taken within
a tick of the folder's last change is not kept (git's "racily clean" rule, as in
``tools.permission.git_files``).
"""

from __future__ import annotations

import fnmatch
import os
import time

_RACY_NS = 100_000_000
# folder -> (its device, inode and ctime when listed, its names)
_kept: dict[str, tuple[tuple[int, int, int], list[str]]] = {}


def names_in(folder: str) -> list[str]:
    """``os.listdir(folder)`` (not to be changed by the caller); [] if it cannot be listed."""
    try:
        info = os.stat(folder)
    except OSError:
        return []
    key = (info.st_dev, info.st_ino, info.st_ctime_ns)
    kept = _kept.get(folder)
    if kept is not None and kept[0] == key:
        return kept[1]
    listed_at = time.time_ns()
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    if info.st_ctime_ns < listed_at - _RACY_NS:
        _kept[folder] = (key, names)
    else:
        _kept.pop(folder, None)
    return names


# pattern -> (the kept listing it was matched against, the matches): matching a pattern
# against hundreds of names is most of a lookup's cost once the listing is kept.
_matched: dict[str, tuple[list[str], list[str]]] = {}


def matching(pattern: str) -> list[str]:
    """``sorted(glob.glob(pattern))`` for a pattern whose wildcards are all in its last
    part: a wildcard does not match a leading dot, as in glob."""
    folder, name = os.path.split(pattern)
    names = names_in(folder)
    known = _matched.get(pattern)
    if known is not None and known[0] is names:  # the same kept listing, never changed
        return list(known[1])
    dotted = name.startswith(".")
    found = fnmatch.filter(names, name)
    result = sorted(os.path.join(folder, n) for n in found if dotted or n[0] != ".")
    _matched[pattern] = (names, result)  # a listing not kept is never handed out again
    return list(result)
