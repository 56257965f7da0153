"""``python -m ace_helpers.kernels``: the command of :mod:`ace_helpers.repro.kernels`, kept at its short name."""

import sys

from ace_helpers.repro.kernels import main

if __name__ == "__main__":
    sys.exit(main())
