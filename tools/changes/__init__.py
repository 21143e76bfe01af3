"""The change pipeline: from a planned set of file changes to one ask, one all-or-nothing
write (disk or editor), fresh read stamps, the diagnostics the change introduced, and
the metadata (diff, filediff, WorkspaceEdit). Also the text matchers and diffs it uses."""
