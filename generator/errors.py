"""The one exception type that the CLI turns into a one-line message and a non-zero exit, and how
text that a candidate wrote is made safe to show: capped, control characters escaped."""

import re


class TunesmithError(Exception):
    """A user-facing problem: the message names what is wrong and how to fix it, on one line."""

    exit_code = 2


# C0 and C1 control characters (ESC, CR, BEL, CSI ...), DEL, and the Unicode line separators and
# bidirectional overrides that reorder or break what a terminal shows; tab and newline are handled apart.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text, newlines: bool = True) -> str:
    """Untrusted text fit for a terminal or a record: control characters shown as escapes (ESC as
    \\x1b), so it cannot move the cursor, erase lines or recolour; newlines=False escapes \\n too."""
    text = _UNPRINTABLE.sub(_escape, str(text))
    return text if newlines else text.replace("\n", "\\n")


def clipped(text, width: int) -> str:
    """About `width` characters of a one-line text for a last column or a headline: cut after the last whole
    word that fits and marked with an ellipsis, never mid-word (a first word longer than `width` is kept whole)."""
    text = str(text)
    if len(text) <= width:
        return text
    head = text[:width - 1]
    if not text[width - 1].isspace():  # the cut falls inside a word: drop that word, or keep a first one whole
        head = head.rsplit(" ", 1)[0] if " " in head else text.split(" ", 1)[0]
    return head.rstrip(" ,;:-") + "…"


def capped(text, limit: int, keep: str = "head") -> str:
    """At most `limit` characters of untrusted text (its head, or its tail), saying how much was cut;
    capping again changes nothing."""
    text = str(text)
    if len(text) <= limit:
        return text
    note = f" ... [{len(text)} characters, cut]"
    n = max(0, limit - len(note))
    return text[:n] + note if keep == "head" else note.strip() + " " + text[len(text) - n + 1:]
