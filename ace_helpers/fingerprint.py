"""``python -m ace_helpers.fingerprint``: the command of :mod:`ace_helpers.repro.fingerprint`, kept at its short name."""

import sys

from ace_helpers.repro.fingerprint import main

if __name__ == "__main__":
    sys.exit(main())
