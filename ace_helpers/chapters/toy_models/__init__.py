"""Toy models shared by several chapters: the Markov pipeline (chapters 1, 6, 7: :mod:`.markov`), models seen
through their cores (:mod:`.views`) and the stitching knobs chapter 6 shares with chapter 7 (:mod:`.knobs`)."""
