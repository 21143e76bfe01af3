"""Permissions: the rules, the asks, the service that asks a person, and what a folder's
trust and the protected files add (OpenCode's ``permission/next.ts``)."""
