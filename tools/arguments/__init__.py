"""A tool's arguments: the declared dataclass and its stored schemas, the plain check that
answers ordinary calls without pydantic-core, and the words for a malformed call."""
