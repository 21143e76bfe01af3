"""``toolhost setup AGENT``: toolhost in an agent's own config, its own tools off."""
