"""The toy models chapters 6 and 7 compare: their knobs (:mod:`.knobs`) and each trained Markov or mod-add model seen
through its ACE core at a hook (:mod:`.views`)."""
