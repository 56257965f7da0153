"""One plotting function per paper panel, grouped by chapter (seaborn/matplotlib).

Each function takes plain arrays/dicts and returns the matplotlib ``Axes`` (or ``Figure``) it
drew, so chapters stay short and the same panel can be redrawn from a stored artifact.
"""
