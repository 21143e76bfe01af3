"""Checkpoints: every turn's changes kept so that they can be put back exactly.

- ``store``: the layout on disk, what a path holds (``State``) and held (``Before``).
- ``summary``: a checkpoint's runs merged into what it did to each path.
- ``restore``: planning and applying a restore, journalled; ``recover`` at start.
- ``outside``: the scans that find changes made beside toolhost during a turn.
- ``turns``: ``Checkpoints``, the service the protocol, the CLI and ``toolhost acp`` use.
"""
