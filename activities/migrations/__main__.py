"""``python -m activities.migrations``: the old name of ``python -m adapters.store.migrations`` (one release)."""

import sys

from adapters.store.migrations.__main__ import main

if __name__ == "__main__":
    print("note: the migrations moved; use `python -m adapters.store.migrations`", file=sys.stderr)
    sys.exit(main(sys.argv[1:]))
