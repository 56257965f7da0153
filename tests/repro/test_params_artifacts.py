"""Parameter validation, preset resolution and atomic, checksummed artifacts."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ace_helpers.method import checks
from ace_helpers.repro import artifacts, params, session, thread_pools
from ace_helpers.repro.report import Claims
from ace_helpers.toys.tasks.modadd import modadd_dataset


def test_resolve_fills_none_and_explicit_wins():
    presets = {"ci": {"A": 1, "B": 2}, "book": {"A": 10, "B": 20}, "paper": {"A": 100, "B": 200}}
    assert params.resolve("ci", {"A": None, "B": None}, presets) == {"A": 1, "B": 2, "PRESET": "ci"}
    assert params.resolve("book", {"A": 5, "B": None}, presets)["A"] == 5
    with pytest.raises(ValueError, match="PRESET='fast'.*one of"):
        params.resolve("fast", {"A": None, "B": None}, presets)
    with pytest.raises(ValueError, match="does not declare"):
        params.resolve("ci", {"A": None}, presets)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: checks.check_int("EPOCHS", 2.5, low=1), "EPOCHS=2.5.*integer"),
        (lambda: checks.check_int("EPOCHS", 0, low=1), r"EPOCHS=0.*\[1, inf\]"),
        (lambda: checks.check_int("N", True), "N=True"),
        (lambda: checks.check_range("ENERGY", 1.5, low=0, high=1, low_open=True), r"ENERGY=1.5.*\(0, 1\]"),
        (lambda: checks.check_range("ENERGY", float("nan"), low=0, high=1), "finite"),
        (lambda: checks.check_prime("P", 51), "P=51.*prime"),
        (lambda: checks.check_choice("TAIL", "raw", ("logits", "centered")), "TAIL='raw'.*logits"),
        (lambda: checks.check_list("PRIMES", 53, checks.check_prime), "PRIMES=53.*list"),
        (lambda: checks.check_list("PRIMES", [53, 55], checks.check_prime), r"PRIMES\[1\]=55"),
    ],
)
def test_checks_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_check_prime_takes_primes_only():
    assert [n for n in range(3, 30) if _is_allowed_prime(n)] == [3, 5, 7, 11, 13, 17, 19, 23, 29]


def _is_allowed_prime(n: int) -> bool:
    try:
        return checks.check_prime("P", n) == n
    except ValueError:
        return False


def test_modadd_split_is_fixed_and_complete():
    d = modadd_dataset(53)
    assert (len(d.train_inputs), len(d.test_inputs)) == (1404, 1405)
    both = np.concatenate([d.train_inputs.numpy(), d.test_inputs.numpy()])
    assert len({tuple(r) for r in both}) == 53 * 53
    assert ((d.test_inputs.sum(1) % 53) == d.test_answers).all()
    np.testing.assert_array_equal(modadd_dataset(53).train_inputs, d.train_inputs)
    with pytest.raises(ValueError, match="P=51"):
        modadd_dataset(51)


def test_to_plain_and_results(tmp_path):
    plain = artifacts.to_plain({"a": np.float32(1.5), "b": np.arange(3), "c": 1 + 2j, "d": float("nan")})
    assert plain == {"a": 1.5, "b": [0, 1, 2], "c": [1.0, 2.0], "d": None}
    path = artifacts.write_results(tmp_path / "out", {"core_ranks": [3, 3]}, {"SEED": 0})
    data = json.loads(path.read_text())
    assert data["core_ranks"] == [3, 3] and data["params"] == {"SEED": 0} and "torch" in data["versions"]
    with pytest.raises(ValueError, match="reserved"):
        artifacts.write_results(tmp_path, {"params": 1}, {})


def test_artifact_roundtrip_corruption_and_param_mismatch(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"acc": 0.75}, {"eigs": np.array([1.0, 0.5])}

    art, hit = artifacts.cached(tmp_path, "run", {"SEED": 0}, compute)
    assert not hit and art.data == {"acc": 0.75}
    np.testing.assert_array_equal(art.arrays["eigs"], [1.0, 0.5])
    assert art.manifest["params"] == {"SEED": 0} and art.manifest["wall_s"] >= 0
    _, hit = artifacts.cached(tmp_path, "run", {"SEED": 0}, compute)
    assert hit and len(calls) == 1
    assert artifacts.load_artifact(tmp_path, "run", {"SEED": 1}) is None  # other parameters
    (tmp_path / "run.npz").write_bytes((tmp_path / "run.npz").read_bytes()[:-10])  # truncated file
    assert artifacts.load_artifact(tmp_path, "run", {"SEED": 0}) is None
    _, hit = artifacts.cached(tmp_path, "run", {"SEED": 0}, compute)
    assert not hit and len(calls) == 2  # recomputed, never half-read
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary files left behind


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    artifacts.write_json(target, {"v": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(artifacts.os, "replace", boom)
    with pytest.raises(OSError):
        artifacts.write_json(target, {"v": 2})
    assert json.loads(target.read_text()) == {"v": 1}
    assert not list(tmp_path.glob(".*.tmp"))


def test_claims_table_and_assert():
    c = Claims()
    c.check("rank", "3", 3, True)
    c.check("cca", ">= 0.99", 0.5, False)
    assert "**NOT REPRODUCED** (unexpected)" in c.table() and c.summary() == "1 of 2 claims hold"
    with pytest.raises(AssertionError, match="cca"):
        c.assert_all()
    assert c.verdict().startswith("unexpected claim failures")


def test_known_gaps_are_shown_but_do_not_fail():
    c = Claims()
    c.check("rank", "3", 3, True, known_gap="irrelevant when it holds")
    c.check("r2", ">= 0.9", 0.8, False, known_gap="late grokker")
    assert "not reproduced: late grokker" in c.table() and "| reproduced |" in c.table()
    assert c.summary() == "1 of 2 claims hold"
    assert c.verdict() == "no unexpected claim failures"
    c.assert_all()
    c.check("overlap", "<= 0.1", 0.5, False)
    with pytest.raises(AssertionError, match="overlap") as err:
        c.assert_all()
    assert "r2" not in str(err.value)


def test_atomic_write_uses_normal_permissions(tmp_path):
    import os

    path = artifacts.write_json(tmp_path / "p.json", {"v": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def _toy_check(values):
    checks.check_int("N", values["N"], low=1, high=100)
    values["ITEMS"] = list(checks.check_list("ITEMS", values["ITEMS"], lambda n, v: checks.check_int(n, v)))


def _toy_chapter():
    presets = {"ci": {"N": 1, "ITEMS": [1]}, "book": {"N": 2, "ITEMS": [1, 2]}, "paper": {"N": 3, "ITEMS": (1, 2, 3)}}
    return params.ChapterParams("99_toy", presets, _toy_check)


def test_chapter_params_read_the_parameters_cell(tmp_path):
    chapter = _toy_chapter()
    cell = {"PRESET": "ci", "N": None, "ITEMS": None, "OUTPUT_DIR": str(tmp_path / "out"), "np": np, "other": 5}
    cfg = chapter.resolve(cell)
    assert dict(cfg) == {"N": 1, "ITEMS": [1], "PRESET": "ci", "OUTPUT_DIR": tmp_path / "out"}
    assert cfg.N == cfg["N"] == 1 and not (tmp_path / "out").exists()  # checked, not created
    assert chapter.resolve(cell, N=7).N == 7  # an explicit keyword wins over the cell
    assert chapter.resolve(PRESET="paper").ITEMS == [1, 2, 3]  # normalised by the check
    assert cfg.is_preset_run() and not cfg.replace(N=5).is_preset_run() and cfg.replace(N=5).is_preset_run(["ITEMS"])
    with pytest.raises(AttributeError, match="read-only"):
        cfg.N = 3
    with pytest.raises(ValueError, match=r"unknown knob\(s\) for 99_toy: M: no such knob \(allowed"):
        chapter.resolve(M=1)
    with pytest.raises(ValueError, match=r"ITEM: no such knob; did you mean ITEMS\?"):
        chapter.resolve({**cell, "ITEM": [2]})  # a misspelt papermill parameter lands in the cell's namespace
    with pytest.raises(ValueError, match=r"N=0 is not allowed"):
        chapter.resolve(cell, N=0)
    # papermill's injected cell, in the kernel's input history: a lower-case name is refused too, with the knob meant
    history = ["", "# Parameters\nn = 4\nPRESET = 'ci'\n"]
    with pytest.raises(ValueError, match=r"n: no such knob; did you mean N\?"):
        chapter.resolve({**cell, "In": history, "n": 4})
    with pytest.raises(ValueError, match=r"items_count: no such knob; did you mean ITEMS\?"):
        chapter.resolve({**cell, "In": ["# Parameters\nitems_count = 4\n"]})
    assert chapter.resolve({**cell, "In": ["# Parameters\nN = 4\n", "x = 1"], "N": 4}).N == 4  # a knob, any case
    import pickle

    assert dict(pickle.loads(pickle.dumps(cfg))) == dict(cfg)


def test_chapter_params_preset_from_environment(monkeypatch):
    monkeypatch.setenv("ACE_PRESET", "paper")
    assert _toy_chapter().resolve({"PRESET": None, "N": None, "ITEMS": None}).N == 3
    monkeypatch.setenv("ACE_PRESET", "fast")
    with pytest.raises(ValueError, match="PRESET='fast'"):
        _toy_chapter().resolve()


def test_output_dir_is_checked_before_compute(tmp_path):
    chapter = _toy_chapter()
    a_file = tmp_path / "results.json"
    a_file.write_text("{}")
    with pytest.raises(ValueError, match="OUTPUT_DIR=.*a folder, not an existing file"):
        chapter.resolve(OUTPUT_DIR=str(a_file))
    with pytest.raises(ValueError, match="OUTPUT_DIR=.*a folder that can be created"):
        chapter.resolve(OUTPUT_DIR=str(a_file / "sub"))
    with pytest.raises(ValueError, match="OUTPUT_DIR=3"):
        chapter.resolve(OUTPUT_DIR=3)
    assert chapter.resolve(OUTPUT_DIR=str(tmp_path / "new" / "deeper")).OUTPUT_DIR == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()
    assert list(tmp_path.iterdir()) == [a_file]  # the writability probe leaves nothing behind


def test_torch_threads_variable_is_checked(monkeypatch):
    monkeypatch.setenv("TORCH_THREADS", "abc")
    with pytest.raises(ValueError, match="TORCH_THREADS='abc'.*positive integer"):
        thread_pools.set_threads()


def test_known_gaps_apply_only_to_the_presets_own_run():
    from ace_helpers.repro.known_gaps import KnownGaps

    chapter = _toy_chapter()
    gaps = KnownGaps({"book": {"claim_a": "measured reason", "m1:claim_b": "per model"}}, run_knobs=("N",))
    cfg = chapter.resolve(PRESET="book")
    assert gaps.reason(cfg, "claim_a") == "measured reason" and gaps.reason(cfg, "m1:claim_b") == "per model"
    assert gaps.reason(cfg, "claim_c") is None
    assert gaps.reason(cfg.replace(ITEMS=[5]), "claim_a") == "measured reason"  # not a run knob
    assert gaps.reason(cfg.replace(N=9), "claim_a") is None  # another run: a new measurement
    assert gaps.reason(chapter.resolve(PRESET="ci"), "claim_a") is None


def test_manifest_of_the_wrong_shape_or_incomplete_is_corrupt(tmp_path):
    artifacts.save_artifact(tmp_path, "a", params={"k": 1}, data={"x": 1}, arrays={"w": np.ones(3)})
    manifest = tmp_path / "a.manifest.json"
    good = json.loads(manifest.read_text())
    assert artifacts.load_artifact(tmp_path, "a", {"k": 1}) is not None
    assert "node" not in good["machine"]  # no hostname in what we commit
    assert set(good["machine"]) == {"processor", "cpus", "model", "bf16_kernels", "kernels"}  # which kernels bf16 results came from
    assert good["machine"]["bf16_kernels"] in ("amx", "avx512_bf16", "emulated")
    for bad in ([1, 2], {"manifest_version": 1, "params": {"k": 1}, "files": [1]}, "text"):
        manifest.write_text(json.dumps(bad))
        assert artifacts.load_artifact(tmp_path, "a", {"k": 1}) is None
    dropped = dict(good, files={k: v for k, v in good["files"].items() if not k.endswith(".npz")})
    manifest.write_text(json.dumps(dropped))
    assert artifacts.load_artifact(tmp_path, "a", {"k": 1}) is None  # the npz is not covered: no half-read


def test_a_new_run_clears_the_previous_results(tmp_path, capsys):
    chapter = _toy_chapter()
    artifacts.write_results(tmp_path, {"x": 1}, {"SEED": 0})
    session.begin(chapter.resolve(PRESET="ci", OUTPUT_DIR=str(tmp_path)))
    assert not (tmp_path / "results.json").exists() and "removed the previous run" in capsys.readouterr().out


def test_claim_records_and_the_scorecard_table(tmp_path):
    from ace_helpers.repro.report import NOT_TESTED, Claims
    from ace_helpers.repro.report import not_tested_records
    from ace_helpers.repro.paper_claims import PAPER_CLAIMS
    from ace_helpers.repro.scorecard import scorecard_markdown, scorecard_rows, untested_records

    claims = Claims()
    claims.check("holds | with a pipe", "paper 1", 1.0, True, id="markov.r2")
    claims.check("fails", "paper 2", 0.5, False, known_gap="measured cause", id="markov.overlap")
    claims.check("weaker form", "all on the circle", 0.7, False, known_gap="short run", where="Fig. 1D",
                 rule="share ≥ 0.9; partly: ≥ 0.5", partly=0.7 >= 0.5, id="modadd.snap", short="share ≥ 0.9")
    assert "| all on the circle (Fig. 1D) | share ≥ 0.9; partly: ≥ 0.5 | 0.7 | partly: short run |" in claims.table()
    recs = claims.records("book run")
    assert [r["verdict"] for r in recs] == ["reproduced", "not reproduced", "partly"] and recs[1]["note"] == "measured cause"
    assert recs[2]["where"] == "Fig. 1D" and recs[2]["rule"] == "share ≥ 0.9" and recs[2]["details"].startswith("share")
    assert [r["value"] for r in recs] == [1.0, 0.5, 0.7] and all(r["headline"] for r in recs)

    class Row:
        claim, paper, ours, why, id = "late", "~60", 42, "needs 20 000 epochs", "inflation.grows"

    recs += not_tested_records([Row()], "book run")
    assert recs[-1]["verdict"] == NOT_TESTED and recs[-1]["id"] == "inflation.grows"
    rows = scorecard_rows({"01_x": {"claims": recs}})
    table = scorecard_markdown(rows + untested_records(rows, why=dict.fromkeys(PAPER_CLAIMS, "not built")))
    assert "1 reproduced, 1 partly, 1 not reproduced, 0 inconclusive, 42 not tested" in table
    assert "holds \\| with a pipe" in table or "`markov.r2`" in table
    with pytest.raises(ValueError, match="verdict 'maybe'"):
        scorecard_rows({"01_x": {"claims": [dict(recs[0], verdict="maybe")]}})
    path = artifacts.write_results(tmp_path, {"x": 1}, {"SEED": 0}, claims=recs)
    assert json.loads(path.read_text())["claims"] == recs
    with pytest.raises(ValueError, match="reserved keys \\['claims'\\]"):
        artifacts.write_results(tmp_path, {"claims": 1}, {})


def _threads_in_worker(workers: int) -> int:
    return thread_pools.set_threads(workers=workers)


def test_thread_budget_in_parallel_workers(monkeypatch):
    import multiprocessing as mp

    monkeypatch.delenv("TORCH_THREADS", raising=False)
    monkeypatch.setenv("ACE_KERNELS", "native")  # the budget; the reproducible kernels compute with 1 thread
    cores = thread_pools.cpu_cores()
    with mp.get_context("spawn").Pool(2) as pool:  # fresh interpreters, as the chapters' workers
        inside = pool.map(_threads_in_worker, [2, 2])
    assert inside == [max(1, cores // 2)] * 2 and 2 * inside[0] <= max(cores, 2)
    monkeypatch.setenv("TORCH_THREADS", "1")
    with mp.get_context("spawn").Pool(2) as pool:  # the variable still wins
        assert pool.map(_threads_in_worker, [2, 2]) == [1, 1]


def test_printed_and_stored_paths_name_no_machine(tmp_path, monkeypatch, capsys):
    """Inside the project, results.json stores OUTPUT_DIR relative to the root and the returned path
    is relative to the working folder; outside it, paths stay as given."""
    root = tmp_path / "book"
    (root / "notebooks").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\n")
    monkeypatch.chdir(root / "notebooks")
    out = root / "outputs" / "00_x"
    path = artifacts.write_results(out, {"x": 1}, {"OUTPUT_DIR": out})
    assert path == Path("../outputs/00_x/results.json")
    assert json.loads(path.read_text())["params"]["OUTPUT_DIR"] == "outputs/00_x"
    assert artifacts.display_path(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")


def test_known_gaps_of_a_named_run_apply_to_that_run_only():
    """A preset run trained another way (some knobs changed) has its own measured gaps."""
    from ace_helpers.repro.known_gaps import KnownGaps

    chapter = _toy_chapter()
    gaps = KnownGaps({"book": {"claim_a": "the preset's"}, "book, N 7": {"claim_a": "the named run's", "claim_b": "only there"}},
                     runs={"book, N 7": {"PRESET": "book", "N": 7}})  # fmt: skip
    book = chapter.resolve(PRESET="book")
    assert gaps.run_name(book) == "book" and gaps.reason(book, "claim_b") is None
    named = book.replace(N=7)
    assert gaps.run_name(named) == "book, N 7" and gaps.reason(named, "claim_a") == "the named run's"
    assert gaps.reason(named, "claim_b") == "only there"
    assert gaps.run_name(named.replace(ITEMS=[9])) is None  # the named run with another knob changed: no gap known
    assert gaps.run_name(chapter.resolve(PRESET="paper", N=7)) is None  # the same change on another preset


def test_write_report_prints_and_writes_the_same_lines(tmp_path, capsys):
    from ace_helpers.repro.artifacts import write_report
    from ace_helpers.repro.machine import machine_line

    lines = [machine_line(), "  ours 1.0 s | theirs 2.0 s"]
    assert "UTC;" in lines[0] and "CPUs; torch " in lines[0]
    write_report(lines, tmp_path / "sub" / "report.txt")
    assert capsys.readouterr().out == "\n" + "\n".join(lines) + "\n"
    assert (tmp_path / "sub" / "report.txt").read_text() == "\n".join(lines) + "\n"
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["report.txt"]  # no temporary file left behind
    write_report(lines, None)  # print only
    assert capsys.readouterr().out.strip().endswith("theirs 2.0 s")


def test_the_thread_budget_covers_numpy_scipy_and_sklearn_pools():
    """TORCH_THREADS (or the budget) also sets the BLAS and OpenMP pools, also those loaded afterwards:
    two notebooks at once on 2 cores, each with numpy's 2 default threads, made a scikit-learn probe
    ~30x slower than alone."""
    import subprocess
    import sys

    code = (
        "import os, numpy, threadpoolctl\n"
        "from ace_helpers.repro.thread_pools import set_threads\n"
        "set_threads(workers=2)\n"
        "import scipy.linalg, sklearn.linear_model  # their pools load after the call\n"
        "print(sorted({i['num_threads'] for i in threadpoolctl.threadpool_info()}), os.environ['OPENBLAS_NUM_THREADS'],\n"
        "      os.environ.get('MKL_NUM_THREADS'), os.environ['OMP_NUM_THREADS'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_THREADS", *thread_pools.POOL_VARIABLES)}
    env["ACE_KERNELS"] = "native"  # the budget; the reproducible kernels compute with 1 thread
    budget = thread_pools.thread_budget(2)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == [f"[{budget}]", str(budget), str(budget), str(budget)], out
    env |= {"TORCH_THREADS": "1", "OMP_NUM_THREADS": "3"}  # TORCH_THREADS is the one count of every pool
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[1]", "1", "1", "1"], out
