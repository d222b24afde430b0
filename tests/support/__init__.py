"""Helpers shared by the tests of every room: fakes, run builders, paths. Not tests.

Imported as `support.<module>` from any folder: pytest (default prepend import mode) puts tests/, the folder of
conftest.py, on sys.path."""
