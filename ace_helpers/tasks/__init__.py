"""Task data: Markov chains, modular addition, subject-verb agreement."""
