"""Bash: parsing a command line, following it to every program it runs, judging it
against the rules, and running it as a process group that never outlives the call."""
