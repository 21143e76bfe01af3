"""Sub-agents: the agents ``task`` can start, their sessions' rules, and their runners."""
