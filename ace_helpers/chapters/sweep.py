"""``python -m ace_helpers.chapters.sweep``: the command of :mod:`ace_helpers.chapters.grokking_scaling_law.jobs`, kept at its old name."""

import sys

from ace_helpers.chapters.grokking_scaling_law.jobs import grok_unit, main  # noqa: F401 - grok_unit: its stored path

if __name__ == "__main__":
    sys.exit(main())
