"""The one exception type that the CLI turns into a one-line message and a non-zero exit, and how
text that a candidate wrote is made safe to show: capped, control characters escaped."""

import re
import unicodedata


class TunesmithError(Exception):
    """A user-facing problem: the message names what is wrong and how to fix it, on one line."""

    exit_code = 2


# Characters that change what a terminal shows without showing themselves: C0 and C1 controls (ESC,
# CR, BEL, CSI ...) and DEL (Unicode category Cc), format characters (Cf: bidirectional overrides,
# isolates and marks (LRM, RLM, ALM), zero-width spaces and joiners, the soft hyphen, the BOM, tag
# characters), and the line and paragraph separators (Zl, Zp). Newline is handled apart, and so is
# tab (kept in multi-line text such as source, escaped in one-line text).
_NOT_PLAIN = re.compile("[^\x20-\x7e\n]")
_HIDDEN = {"Cc", "Cf", "Zl", "Zp"}


def _escaper(keep_tabs: bool):
    def escape(match: re.Match) -> str:
        ch = match.group()
        if (ch == "\t" and keep_tabs) or unicodedata.category(ch) not in _HIDDEN:
            return ch
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

    return escape


_MULTI_LINE, _ONE_LINE = _escaper(keep_tabs=True), _escaper(keep_tabs=False)


def printable(text, newlines: bool = True) -> str:
    """Untrusted text fit for a terminal or a record: control and invisible format characters shown as
    escapes (ESC as \\x1b, a zero-width space as \\u200b), so it cannot move the cursor, erase lines,
    recolour, reorder or hide what it says; newlines=False escapes \\n and tab too (one line)."""
    text = _NOT_PLAIN.sub(_MULTI_LINE if newlines else _ONE_LINE, str(text))
    return text if newlines else text.replace("\n", "\\n")


def clipped(text, width: int) -> str:
    """About `width` characters of a one-line text for a last column or a headline: cut after the last whole
    word that fits and marked with an ellipsis, never mid-word (a first word longer than `width` is kept whole)."""
    text = str(text)
    if len(text) <= width:
        return text
    head = text[: width - 1]
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
    return text[:n] + note if keep == "head" else note.strip() + " " + text[len(text) - n + 1 :]
