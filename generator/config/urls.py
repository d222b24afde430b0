"""The executor URL grammar (`[evaluation] executor`): checked here; generator.evaluation runs them."""

from __future__ import annotations

import re

from generator import registry

# Executor URLs (`[evaluation] executor`): a name of the registry's "executor" table, bare (`local`,
# `dask-local`) or a scheme with its address (`dask://HOST:PORT`); the grammar is checked here, the
# executors themselves run in generator.evaluation.
_ADDRESS = re.compile(r"^(?P<scheme>[a-z]+)://(?P<host>[^:/\s]+|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})/?$")


def executor_name(url: str | None) -> str:
    """The registry name an executor URL is served by: the URL itself, or its scheme and '://' (None: local)."""
    if not url:
        return "local"
    return url.split("://", 1)[0] + "://" if "://" in url else url


def executor_choices() -> str:
    """The executor URLs there are, for an error message: 'local', ... or 'dask://HOST:PORT'."""
    # in the table's order (the default, 'local', first), the bare names before the addresses
    table = registry.table("executor")
    forms = [f"'{n}HOST:PORT'" if n.endswith("://") else f"'{n}'" for n in table]
    forms.sort(key=lambda f: f.endswith("HOST:PORT'"))
    return ", ".join(forms[:-1]) + " or " + forms[-1]


def url_problem(url: str) -> str | None:
    """What is wrong with an executor URL (None if it is fine): 'local', 'dask-local' or 'dask://HOST:PORT'."""
    name = executor_name(url)
    if name in registry.names("executor") and not name.endswith("://"):
        return None
    m = _ADDRESS.match(url or "")
    if m is None or f"{m['scheme']}://" not in registry.names("executor"):
        return f"unknown executor {url!r}; use {executor_choices()}"
    if not 0 < int(m["port"]) < 65536:
        return f"executor {url!r}: port {m['port']} is out of range 1-65535"
    return None
