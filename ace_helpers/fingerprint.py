"""``python -m ace_helpers.fingerprint``: the command of :mod:`ace_helpers.repro.fingerprint`, kept at its short name (its
public names are re-exported here for scripts written against the old path)."""

import sys

from ace_helpers.repro.fingerprint import *  # noqa: F403 - the old path's names
from ace_helpers.repro.fingerprint import main

if __name__ == "__main__":
    sys.exit(main())
