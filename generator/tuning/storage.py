"""Where Optuna keeps the studies: a storage URL (sqlite:///, postgresql://, mysql://) or journal:PATH.

`check_storage` finds an unusable storage before a campaign or `hpo` starts, writing nothing, so
the campaign does not run for hours to fail at its last stage. Messages name where the URL came
from (`--storage` or `[hpo] storage`), never a flag the user did not give.
"""

from __future__ import annotations

import errno
import os
import time
import warnings
from pathlib import Path

import optuna

from generator.errors import TunesmithError

FORMS = "sqlite:///PATH, postgresql://..., mysql://... or journal:PATH"


class HpoError(TunesmithError):
    """HPO cannot run as asked."""


def storage_url(run_dir: Path, storage: str | None) -> str:
    """The storage URL: the given one, or SQLite in the run directory."""
    return storage or f"sqlite:///{(Path(run_dir) / 'hpo.db').resolve()}"


GRACE_BEATS = 4  # heartbeats a RUNNING trial may miss before Optuna fails it (and it is run again)


def open_storage(url: str, origin: str = "--storage", heartbeat: float = 30.0):
    """An Optuna storage for a URL; RDB storages get trial heartbeats with Optuna's RetryHeartbeatStaleTrialCallback.

    A trial whose process died (on any host) stops beating; `fail_stale_trials` fails it after
    GRACE_BEATS missed beats and the callback queues it again. JournalStorage has no heartbeat in
    Optuna: there only generator.tuning.recovery (dead owners on this host) applies, and a trial left
    RUNNING by another host is reported, never counted as finished. `origin` names where the URL came from.
    """
    from generator.tuning.recovery import MAX_RETRY

    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return JournalStorage(JournalFileBackend(_journal_path(url)))
    if "://" not in url:
        raise HpoError(f"{origin} {url!r} is not a storage URL; use {FORMS}")
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None
    beat = max(1, int(round(heartbeat)))
    for attempt in range(6):
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna 5 and say so loudly
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # that only: a deprecation shows
                return optuna.storages.RDBStorage(
                    url,
                    engine_kwargs=engine,
                    heartbeat_interval=beat,
                    grace_period=GRACE_BEATS * beat,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(
                        max_retry=MAX_RETRY
                    ),
                )
        except Exception as exc:  # noqa: BLE001 - sqlalchemy and drivers raise many kinds
            # workers that start together race to create the schema; the loser just opens it again
            if attempt < 5 and any(w in str(exc) for w in ("already exists", "UNIQUE constraint", "locked")):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise HpoError(
                f"{origin} {url}: cannot open ({exc.__class__.__name__}: {str(exc).splitlines()[0]}); "
                "check the URL and that its database driver is installed"
            ) from None


def _journal_path(url: str) -> str:
    return url[len("journal:") :].removeprefix("//")


def check_storage(url: str | None, origin: str) -> None:
    """Refuse a storage that `open_storage` could not use, without creating or writing anything.

    None (SQLite in the run directory) needs nothing beyond the run directory itself.
    """
    if url is None:
        return
    if url.startswith("journal:"):
        _check_file(Path(_journal_path(url)), url, origin)
        return
    if "://" not in url:
        raise HpoError(f"{origin} {url!r} is not a storage URL; use {FORMS}")
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
        parsed.get_dialect()  # the driver module: a missing one fails here, not after the campaign
    except Exception as exc:  # noqa: BLE001 - ArgumentError, NoSuchModuleError, ImportError
        raise HpoError(
            f"{origin} {url}: not usable ({exc.__class__.__name__}: {str(exc).splitlines()[0]}); "
            f"use {FORMS} with its database driver installed"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            _check_file(Path(parsed.database), url, origin)
        return
    _check_server(url, origin)


def _check_file(path: Path, url: str, origin: str) -> None:
    """The storage's file is a file (or can be created) in a folder that exists and is writable."""
    path = path.expanduser().absolute()
    if path.is_dir():
        raise HpoError(f"{origin} {url}: {path} is a folder; name a file in it")
    folder = path.parent
    if not folder.is_dir():
        raise HpoError(
            f"{origin} {url}: folder {folder} does not exist; create it or name a file in a folder that does"
        )
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK) or _read_only_fs(folder):
        raise HpoError(f"{origin} {url}: {target} is not writable; name a file where you may write")


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError as exc:
        return exc.errno == errno.EROFS


def _check_server(url: str, origin: str) -> None:
    """A database server: connect once (reads nothing, writes nothing)."""
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(url)
    except ImportError as exc:  # the dialect's driver (psycopg2, pymysql, ...) loads here
        raise HpoError(
            f"{origin} {url}: its database driver is not installed ({exc}); install that module "
            "with pip, or use sqlite:///PATH or journal:PATH"
        ) from None
    try:
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # noqa: BLE001 - any driver's failure to connect is the user's setup
        raise HpoError(
            f"{origin} {url}: cannot connect ({exc.__class__.__name__}: {str(exc).splitlines()[0]}); "
            "check the server, the URL and the credentials"
        ) from None
