"""``python -m ace_helpers.seed_check``: the command of :mod:`ace_helpers.repro.seed_check`, kept at its short name."""

import sys

from ace_helpers.repro.seed_check import main

if __name__ == "__main__":
    sys.exit(main())
