"""Task data for the toy transformers: Markov chains, modular addition, planted linear systems."""
