"""``python -m ace_helpers.runbook``: the command of :mod:`ace_helpers.repro.runbook`, kept at its short name."""

import sys

from ace_helpers.repro.runbook import main

if __name__ == "__main__":
    sys.exit(main())
