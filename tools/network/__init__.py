"""Network access by domain: ``sandbox.network: {allow: [...], deny: [...]}``.

- ``patterns``: the rules' syntax (``pypi.org``, ``*.npmjs.org``, ``github.com:443``, a
  literal address) and what a destination a client names is.
- ``addresses``: which addresses are private (loopback, link-local, private ranges), and
  name resolution (``TOOLHOST_NETWORK_HOSTS`` for tests).
- ``gate``: one call's decisions: the lists, the ``network`` rules and "always" answers,
  the person's asks, and the log of what was reached and refused.
- ``proxy``: the proxy a sandboxed command reaches through the loopback listener of its
  own network namespace: HTTP CONNECT, plain HTTP and SOCKS5 (``http``, ``socks``).
- ``relay``: connecting to the checked address and copying bytes both ways.
"""
