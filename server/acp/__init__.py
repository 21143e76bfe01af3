"""``toolhost acp``: the ACP proxy that puts toolhost between an editor and an ACP agent."""
