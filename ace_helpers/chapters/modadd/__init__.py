"""The modular-addition run shared by chapters 2 and 3: presets, per-checkpoint analysis, training, long run.

``config`` (knobs, presets, schedule), ``analysis`` (what is measured at a checkpoint),
``run`` (resumable training + the per-model artifact cache), ``long_run`` (the stored part of
an unfinished long run); ``python -m ace_helpers.chapters.modadd`` trains a preset's run.
"""
