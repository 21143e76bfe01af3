"""Config: the files (OpenCode JSON/JSONC, the YAML tool registry), where they live,
and the rules they become."""
