"""The Markov-chain run that chapter 1 reports and chapters 6 and 7 train again: one chain's seeds trained and
analysed (:mod:`.run`), as jobs over worker processes (:mod:`.jobs`), and the chain's spectra (:mod:`.spectra`)."""
