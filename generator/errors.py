"""The one exception type that the CLI turns into a one-line message and a non-zero exit."""


class TunesmithError(Exception):
    """A user-facing problem: the message names what is wrong and how to fix it, on one line."""

    exit_code = 2
