"""How much a submission may hold: the loader refuses more, with a message that says so."""

MAX_FILE = 2 << 20          # 2 MiB per source file (a notebook's code included)
MAX_FILES = 200             # entries read from a folder; five times as many members of a zip
MAX_TOTAL = 64 << 20        # a submission's files read together (the largest notebook alone may take it all)
