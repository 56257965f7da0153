"""``python -m ace_helpers.variants``: the command of :mod:`ace_helpers.repro.variants`, kept at its short name."""

import sys

from ace_helpers.repro.variants import main

if __name__ == "__main__":
    sys.exit(main())
