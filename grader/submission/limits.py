"""How much a submission may hold: the loader refuses more, with a message that says so."""

MAX_FILE = 2 << 20          # 2 MiB per source file (a notebook's code included)
MAX_FILES = 200             # entries read from a folder; five times as many members of a zip
