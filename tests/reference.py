"""Reference implementations used only by tests and benchmarks (slow or superseded code kept to check the library against)."""

from __future__ import annotations


# --------------------------------------------------------------------------------------------
# the Markov chapter's former all-positions ensemble loop (ace_helpers.markov, before
# ensemble.train_ensemble took over with loss_positions="all"): the numbers must stay identical
# --------------------------------------------------------------------------------------------
def train_ensemble_all_positions(cfg, inputs, targets, seeds, *, epochs, batch_size, lr):
    """Ensemble training loop with the loss on every position; per-member data order and dropout."""
    import torch
    from torch.nn import functional as F

    from ace_helpers.ensemble import EnsembleAdamW, ToyEnsemble

    n_members = len(seeds)
    n, vocab = inputs.shape[0], cfg.vocab
    ens = ToyEnsemble.from_seeds(cfg, seeds).train()
    opt = EnsembleAdamW(list(ens.parameters()), lr=lr, weight_decay=[0.0] * n_members)
    data_gens = [torch.Generator().manual_seed(s) for s in seeds]
    drop_gens = [torch.Generator().manual_seed(s + 1_000_003) for s in seeds]
    losses = [[] for _ in seeds]
    for _ in range(epochs):
        order = torch.stack([torch.randperm(n, generator=g) for g in data_gens])  # (M, n)
        total = torch.zeros(n_members, dtype=torch.float64)
        for start in range(0, n, batch_size):
            idx = order[:, start : start + batch_size]  # (M, B)
            logits = ens(inputs[idx], generators=drop_gens)  # (M, B, T, V)
            per_token = F.cross_entropy(logits.reshape(-1, vocab), targets[idx].reshape(-1), reduction="none")
            member_loss = per_token.view(n_members, -1).mean(dim=1)  # (M,) each member's own mean
            opt.zero_grad()
            member_loss.sum().backward()
            opt.step()
            total += member_loss.detach().double() * idx.shape[1]
        for m in range(n_members):
            losses[m].append(float(total[m] / n))
    ens.eval()
    return [ens.member(m) for m in range(n_members)], losses


# --------------------------------------------------------------------------------------------
# chapter 5's naive state collection (formerly ace_helpers.agreement.collect_states_per_layer):
# one forward + backward per layer and batch, plain torch hooks; collect_states must match it
# --------------------------------------------------------------------------------------------
def collect_states_per_layer(lm, tokenizer, prompts, layers, *, batch_size=25):
    """The naive way (benchmark and test reference): one forward + backward per layer and batch.

    Plain torch forward hooks; ``torch.autograd.grad`` of the margin w.r.t. that one layer's output.
    Returns a :class:`ace_helpers.chapters.llm_agreement.States`.
    """
    import numpy as np
    import torch

    from ace_helpers import llm
    from ace_helpers.chapters.llm_agreement import States
    from ace_helpers.tasks.agreement import margin, verb_token_ids

    ids = verb_token_ids(tokenizer)
    model = llm.torch_module(lm)
    paths = llm.block_paths(lm)
    enc = llm.encode(tokenizer, prompts)
    H = np.zeros((len(layers), len(prompts), model.config.hidden_size), np.float32)
    G = np.zeros_like(H)
    ms = np.zeros(len(prompts))
    for li, ell in enumerate(layers):
        block = llm.module(lm, paths[ell - 1])
        for start in range(0, len(prompts), batch_size):
            batch = llm.batch_rows(enc, start, start + batch_size)
            seen = {}

            def hook(_mod, _inp, out):
                hidden = out[0] if isinstance(out, tuple) else out
                hidden.requires_grad_(True)
                seen["h"] = hidden
                return out

            handle = block.register_forward_hook(hook)
            try:
                with torch.enable_grad():
                    logits = model(**batch).logits[:, -1]
                    m = margin(logits, ids)
                    (g,) = torch.autograd.grad(m.sum(), seen["h"])
            finally:
                handle.remove()
            stop = start + batch["input_ids"].shape[0]
            H[li, start:stop] = seen["h"][:, -1].detach().float().numpy()
            G[li, start:stop] = g[:, -1].float().numpy()
            ms[start:stop] = m.detach().float().numpy()
    return States(layers=list(layers), H=H, G=G, margin=ms)


# --------------------------------------------------------------------------------------------
# the rank scan done the slow way (ace_helpers.scans.rank_scan batches every rank at once)
# --------------------------------------------------------------------------------------------
def naive_rank_scan(H, W, b, Q, y):
    """Keep-only / core-removed accuracy at every rank r = 0..R: one projection + readout per rank."""
    import numpy as np

    keep, remove = [], []
    for r in range(Q.shape[1] + 1):
        P = Q[:, :r] @ Q[:, :r].T
        keep.append(float((((H @ P) @ W.T + b).argmax(1) == y).mean()))
        remove.append(float((((H - H @ P) @ W.T + b).argmax(1) == y).mean()))
    return np.array(keep), np.array(remove)
