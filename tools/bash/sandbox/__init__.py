"""The kernel sandbox every bash command runs in, and the supervisor that starts it.

The parts, bottom up (everything but ``settings`` imports only the standard library,
so the supervisor process starts without loading the rest of toolhost):

- ``syscalls``: libc and the per-architecture numbers ctypes needs.
- ``landlock``: Landlock rulesets (which paths a command may write, or read).
- ``seccomp``: the filter that refuses network sockets when no network namespace can.
- ``namespaces``: a user + mount (+ network) namespace per command: read-only re-binds
  of protected paths inside the project, hidden paths, no network.
- ``bwrap``: the bubblewrap command line, the engine where Landlock is missing.
- ``probe``: what this machine supports (and ``TOOLHOST_SANDBOX_SIMULATE``).
- ``plan``: from a ``Policy`` and the machine's ``Support`` to what one command gets.
- ``child``: what runs between fork and exec.
- ``guard``: the supervisor process: it starts every command, is the child subreaper
  of all of them, and kills what is left when the sidecar goes away.
- ``client``: the sidecar's side of the supervisor.
- ``settings``: config and rules to a ``Policy`` (the one part that knows toolhost).
- ``denials``: a write the sandbox stopped, found in the output, for the model.
"""
