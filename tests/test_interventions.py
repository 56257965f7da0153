"""nnsight interventions give the same numbers as plain torch forward hooks."""

import nnsight
import numpy as np
import pytest
import torch

from ace_helpers import extract_core
from ace_helpers.interventions import accuracy_under, capture, run_with_core, run_with_edit
from ace_helpers.models import ToyConfig, build_model


@pytest.fixture(scope="module")
def toy():
    model = build_model(ToyConfig(vocab=5, d_model=16, n_layers=2, n_heads=2, max_len=8), seed=0).eval()
    x = torch.randint(0, 5, (40, 6), generator=torch.Generator().manual_seed(0))
    return model, nnsight.NNsight(model), x


def _hooked(model, x, layer, fn):
    handle = model.layers[layer].register_forward_hook(lambda mod, inp, out: fn(out))
    try:
        with torch.no_grad():
            return model(x)
    finally:
        handle.remove()


def test_capture_matches_hook(toy):
    model, nm, x = toy
    seen = {}
    _hooked(model, x, 1, lambda out: seen.setdefault("h", out.clone()))
    # float32 round-off only (the stock encoder layer may take its fused eval path under nnsight)
    torch.testing.assert_close(capture(nm, x, "layers.1"), seen["h"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(capture(nm, x, "layers.1", positions=-1), seen["h"][:, -1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(capture(nm, x, "layers.1", positions=[0, 2]), seen["h"][:, [0, 2]], rtol=1e-5, atol=1e-5)
    per_row = torch.randint(0, 6, (40,))
    torch.testing.assert_close(capture(nm, x, "layers.1", positions=per_row), seen["h"][torch.arange(40), per_row])


@pytest.mark.parametrize("mode", ["keep", "remove", "flip"])
@pytest.mark.parametrize("positions", [None, -1])
@pytest.mark.parametrize("centered", [False, True])
def test_core_interventions_match_hooks(toy, mode, positions, centered):
    model, nm, x = toy
    h = capture(nm, x, "layers.0").reshape(-1, 16)
    core = extract_core(h, model.lm_head.weight.detach(), rank=3)
    edit = {
        "keep": lambda t: core.keep(t, centered=centered),
        "remove": lambda t: core.remove(t, centered=centered),
        "flip": lambda t: core.flip(t),
    }[mode]

    def hook_fn(out):
        if positions is None:
            return edit(out)
        out = out.clone()
        out[:, positions] = edit(out[:, positions])
        return out

    ref = _hooked(model, x, 0, hook_fn)
    got = run_with_core(nm, x, "layers.0", core, mode, positions=positions, centered=centered)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    clean = run_with_core(nm, x, "layers.0", None, None)
    assert (got - clean).abs().max() > 1e-3  # the edit did something


def test_edit_leaves_other_positions_untouched(toy):
    model, nm, x = toy
    zeroed = run_with_edit(nm, x, "layers.1", torch.zeros_like, positions=-1)
    clean = run_with_edit(nm, x, "layers.1", None)
    torch.testing.assert_close(zeroed[:, :-1], clean[:, :-1], rtol=0, atol=0)


def test_accuracy_under_intervention(toy):
    model, nm, x = toy
    with torch.no_grad():
        pred = model(x).argmax(-1)
    assert accuracy_under(nm, x, pred, "layers.0", None, None, batch_size=7) == 1.0
    h = capture(nm, x, "layers.1").reshape(-1, 16)
    # post-LN outputs span a 15-D affine hyperplane: keeping all of it about the mean changes nothing
    full = extract_core(h, np.eye(16), rank=15)
    assert accuracy_under(nm, x, pred, "layers.1", full, "keep", centered=True) == pytest.approx(1.0)
    assert accuracy_under(nm, x, pred, "layers.1", full, "remove", centered=True) < 0.9


def test_bad_module_path_and_mode(toy):
    model, nm, x = toy
    with pytest.raises(ValueError, match="no component"):
        capture(nm, x, "layers.7")
    core = extract_core(np.random.default_rng(0).standard_normal((50, 16)), np.eye(16), rank=2)
    with pytest.raises(ValueError, match="mode"):
        run_with_core(nm, x, "layers.0", core, "invert")
