"""ace_helpers: Algorithmic Core Extraction (ACE) for torch models and LLMs."""
__version__ = "0.1.0"
