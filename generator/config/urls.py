"""The executor URL grammar (`[evaluation] executor`): checked here; generator.evaluation runs them."""

from __future__ import annotations

import re

DASK_LOCAL = "dask-local"
REMOTE_SCHEMES = ("dask", "tcp", "tls")  # dask://H:P is tcp://H:P; tcp:// and tls:// are Dask's own forms
_ADDRESS = re.compile(r"^(?P<scheme>[a-z]+)://(?P<host>[^:/\s]+|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})/?$")


def url_problem(url: str) -> str | None:
    """What is wrong with an executor URL (None if it is fine): 'local', 'dask-local' or 'dask://HOST:PORT'."""
    if url in ("local", DASK_LOCAL):
        return None
    m = _ADDRESS.match(url or "")
    if m is None or m["scheme"] not in REMOTE_SCHEMES:
        return f"unknown executor {url!r}; use 'local', 'dask-local' or 'dask://HOST:PORT' (a Dask scheduler)"
    if not 0 < int(m["port"]) < 65536:
        return f"executor {url!r}: port {m['port']} is out of range 1-65535"
    return None
