"""ace_helpers.repro.official_runs: the release's mod-add run, driven and stored (with a fake release)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ace_helpers.repro import official_runs
from ace_helpers.repro.artifacts import load_artifact

FAKE_RUN = '''
import numpy as np
from pathlib import Path
TOTAL_EPOCHS = 20000
K_MODELS = 3
def main():
    for arm in ("wd1", "wd0"):
        d = Path("experiments/modular_addition/results") / f"{arm}_res"
        d.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(d / "core_formation.npz", epochs=np.arange(0, TOTAL_EPOCHS + 1, 500), k=np.array(K_MODELS))
        np.savez_compressed(d / "mode_spread.npz", r2=np.ones((K_MODELS, 3)))
'''


def _release(root: Path, run_script: str = FAKE_RUN) -> Path:
    for name in ("markov.py", "modadd.py", "src/cores/markov.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "src/cores/__init__.py").write_text("")
    (root / "src/cores/run_modadd.py").write_text(run_script)
    return root


def test_the_release_runs_with_its_constants_set_and_its_results_are_stored(tmp_path: Path) -> None:
    release = _release(tmp_path / "cores")
    manifest = official_runs.run_modadd(release, tmp_path / "work", tmp_path / "store", epochs=2000, k_models=2)
    stored = load_artifact(tmp_path / "store", "official_modadd_e2000_k2")
    assert stored is not None and manifest.is_file()
    assert stored.arrays["wd1/core_formation/epochs"].tolist() == [0, 500, 1000, 1500, 2000]
    assert stored.arrays["wd0/mode_spread/r2"].shape == (2, 3)
    assert "r.TOTAL_EPOCHS = 2000; r.K_MODELS = 2; r.main()" in stored.data["command"]
    params = json.loads(manifest.read_text())["params"]
    assert params["TOTAL_EPOCHS"] == 2000 and params["release"] == "joshseth/cores"
    assert not (release / "experiments").exists()  # the run wrote into the scratch copy only


FAKE_MARKOV = '''
import json, sys
from pathlib import Path
assert sys.argv[1:] == ["--only", "run"], sys.argv
out = Path("experiments/markov_chain/results")
out.mkdir(parents=True, exist_ok=True)
(out / "results.json").write_text(json.dumps({"oracle_r2": 0.5, "dynamics": [{"r2_mean": 0.49}]}))
'''


def test_the_release_markov_run_is_stored_as_written(tmp_path: Path) -> None:
    release = _release(tmp_path / "cores")
    (release / "markov.py").write_text(FAKE_MARKOV)
    manifest = official_runs.run_markov(release, tmp_path / "work", tmp_path / "store")
    stored = load_artifact(tmp_path / "store", "official_markov")
    assert stored is not None and manifest.is_file()
    assert stored.data["results"] == {"oracle_r2": 0.5, "dynamics": [{"r2_mean": 0.49}]}
    assert stored.data["command"].endswith("markov.py --only run")
    silent = _release(tmp_path / "b")
    (silent / "markov.py").write_text("pass\n")
    with pytest.raises(FileNotFoundError, match="did not write"):
        official_runs.run_markov(silent, tmp_path / "wb", tmp_path / "store")


def test_bad_requests_are_refused_before_any_work(tmp_path: Path) -> None:
    release = _release(tmp_path / "cores")
    with pytest.raises(ValueError, match="epochs"):
        official_runs.modadd_command(500, 3)
    with pytest.raises(ValueError, match="k_models"):
        official_runs.modadd_command(2000, 4)
    (tmp_path / "work").mkdir()
    with pytest.raises(FileExistsError, match="give a new folder"):
        official_runs.run_modadd(release, tmp_path / "work", tmp_path / "store", epochs=2000)
    with pytest.raises(SystemExit, match="lacks"):
        official_runs.run_modadd(tmp_path, tmp_path / "w2", tmp_path / "store", epochs=2000)


def test_a_failing_or_silent_run_is_reported(tmp_path: Path) -> None:
    failing = _release(tmp_path / "a", "def main():\n    raise SystemExit(3)\n")
    with pytest.raises(RuntimeError, match="exit 3"):
        official_runs.run_modadd(failing, tmp_path / "wa", tmp_path / "store", epochs=2000)
    silent = _release(tmp_path / "b", "def main():\n    pass\n")
    with pytest.raises(FileNotFoundError, match="did not write"):
        official_runs.run_modadd(silent, tmp_path / "wb", tmp_path / "store", epochs=2000)


STORED = Path(__file__).parents[2] / "book" / "artifacts" / "official_modadd"


def test_the_stored_official_run_loads_with_its_provenance() -> None:
    """The release's mod-add run to epoch 2 000 (3 models), rerun here: checksums, provenance, and its own
    analysis on the release's checkpoint cadence (every 100 epochs), with its models grokked."""
    manifest = json.loads((STORED / "official_modadd_e2000_k3.manifest.json").read_text())
    assert manifest["params"]["commit"] == "da253a0769d3bf35048404c46d87205846262bfc"
    assert manifest["params"]["TOTAL_EPOCHS"] == 2000 and manifest["params"]["K_MODELS"] == 3
    stored = load_artifact(STORED, "official_modadd_e2000_k3", manifest["params"])
    assert stored is not None, "the stored official run does not load (checksum or parameters)"
    epochs = stored.arrays["wd1/core_formation/epochs"]
    assert epochs.tolist() == list(range(0, 2001, 100))
    for arm in ("wd1", "wd0"):
        acc = stored.arrays[f"{arm}/core_formation/test_acc"]
        assert acc.shape == (3, 21) and np.all(acc[:, -1] > 0.99), (arm, acc[:, -1])
        assert stored.arrays[f"{arm}/mode_spread/present"].shape == (3, 27, 21)
