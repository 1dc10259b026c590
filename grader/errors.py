"""Exceptions the front-ends map to exit code 2 (usage), importable without loading torch."""


class SelectionError(Exception):
    """An exercise or module name on the command line that the catalog does not know."""
