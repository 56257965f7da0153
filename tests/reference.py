"""Reference implementations used only by tests and benchmarks (slow or superseded code kept to check the library against)."""

from __future__ import annotations


# --------------------------------------------------------------------------------------------
# the Markov chapter's former all-positions ensemble loop (ace_helpers.markov, before
# ensemble_runs.train_ensemble took over with loss_positions="all"): the numbers must stay identical
# --------------------------------------------------------------------------------------------
def train_ensemble_all_positions(cfg, inputs, targets, seeds, *, epochs, batch_size, lr):
    """Ensemble training loop with the loss on every position; per-member data order and dropout."""
    import torch
    from torch.nn import functional as F

    from ace_helpers.toys.ensemble import EnsembleAdamW, ToyEnsemble

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
    from ace_helpers.llm.agreement import margin, verb_token_ids

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
# the rank scan done the slow way (ace_helpers.method.scans.rank_scan batches every rank at once)
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


# --------------------------------------------------------------------------------------------
# chapter 5's former steered generation (ace_helpers.chapters.llm_agreement.generation before
# the calibration runs skipped the blocks before the edit and cut the head to the four verbs)
# --------------------------------------------------------------------------------------------
def steered_generate_full_runs(lm, tok, prompts, layer, core, *, n_new, seed=None, refine=0, eps=1.0, s0=0.2,
                               clip=50.0, top_k=50):
    """The calibrated-flip rule of ``generate_with_flip`` with every run a full single-token forward (KV
    cache of the clean states) over all blocks and the whole vocabulary (sampling as ``generate_with_flip``). Returns (tokens (B, n_new),
    scales (n_new, B), achieved copula margins (n_new, B))."""
    import copy

    import numpy as np
    import torch

    from ace_helpers import llm
    from ace_helpers.chapters.llm_agreement.generation import sample_top_k
    from ace_helpers.llm.agreement import copula_margin, verb_token_ids
    from ace_helpers.method import interventions

    ids = verb_token_ids(tok)
    path = llm.block_paths(lm)[layer - 1]
    batch = llm.encode(tok, prompts)
    cache = llm.prefix_cache(lm, batch)
    gen = None if seed is None else torch.Generator().manual_seed(int(seed))
    token, pos, mask = batch["input_ids"][:, -1:], batch["position_ids"][:, -1:], batch["attention_mask"]
    toks, scales, achieved = [], [], []

    def run(c, scale):
        fn = None if scale is None else (lambda h: core.flip(h, scale=scale.float()[:, None].to(h.dtype)))
        step = llm.with_cache(lm, {"input_ids": token, "attention_mask": mask, "position_ids": pos, "use_cache": True,
                                   "logits_to_keep": 1}, c)
        logits = interventions.run_with_edit(lm, step, path, fn, positions=-1)[:, -1].double()
        return logits, copula_margin(logits, ids)

    for _ in range(n_new):
        before = copy.deepcopy(cache)
        _, m0 = run(cache, None)  # extends `cache` with the clean states
        _, m1 = run(copy.deepcopy(before), torch.full_like(m0, s0))
        target = torch.where(m0 > 0, -eps, eps)
        slope = (m1 - m0) / s0
        slope = torch.where(slope.abs() < 1e-8, torch.full_like(slope, 1e-8), slope)
        scale = ((target - m0) / slope).clamp(-clip, clip)
        s_prev, m_prev = torch.full_like(scale, s0), m1
        for _ in range(refine):
            _, m_now = run(copy.deepcopy(before), scale)
            dm = m_now - m_prev
            ok = dm.abs() > 1e-8
            new = torch.where(ok, scale + (target - m_now) * (scale - s_prev) / torch.where(ok, dm, torch.ones_like(dm)), scale)
            s_prev, m_prev, scale = scale, m_now, new.clamp(-clip, clip)
        logits, m = run(before, scale)
        nxt = sample_top_k(logits, gen, top_k)
        toks.append(nxt)
        scales.append(scale.numpy())
        achieved.append(m.numpy())
        token, pos = nxt[:, None], pos + 1
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    return torch.stack(toks, 1), np.array(scales), np.array(achieved)


def sample_top_k_full_vocabulary(logits, gen, top_k):
    """Chapter 5's former sampler: logits below the k-th set to −inf, then a multinomial over the whole
    vocabulary (one random number per vocabulary entry). Same distribution as ``sample_top_k``."""
    import torch

    kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
    probs = torch.softmax(logits.masked_fill(logits < kth, float("-inf")), -1)
    return torch.multinomial(probs, 1, generator=gen)[:, 0]
