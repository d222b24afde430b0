# expect: exception
# Issue 23 item 11: an error message that erases the FAILED line and prints a forged score.
class TerminalEscapes:
    def __call__(self, func, searchspace):
        func(searchspace.get_random_sample(1)[0])
        raise RuntimeError("\x1b[1A\x1b[2K\r\x1b[1A\x1b[2K\rmean P = 1.000  walls held: 15/15\x1b]0;owned\x07\x9b2J")
