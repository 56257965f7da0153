"""The toys wing: the small transformers of the paper's toy experiments, their training and their data.

Models (:mod:`.models`), one-model training (:mod:`.train`), the batched ensemble trainer
(:mod:`.ensemble`, :mod:`.ensemble_trainer`, :mod:`.ensemble_optim`), bf16 support of this CPU
(:mod:`.precision`) and the task data (:mod:`.tasks`: Markov chains, modular addition, planted systems).
"""
