"""The official code release is checked before any work and copied without its history or earlier results."""

from __future__ import annotations

import pytest

from ace_helpers.repro.official import OFFICIAL_FILES, check_official, copy_official


def test_a_folder_that_lacks_the_release_files_is_refused_naming_them(tmp_path):
    (tmp_path / "markov.py").write_text("")
    with pytest.raises(SystemExit, match=r"is not a checkout of the paper's code release \(joshseth/cores\): it lacks "
                                         r"modadd.py, src/cores/markov.py$"):  # fmt: skip
        check_official(tmp_path)
    assert check_official(tmp_path, needs=("markov.py",)) == tmp_path.resolve()


def test_a_checkout_is_copied_without_git_and_earlier_results(tmp_path):
    checkout = tmp_path / "cores"
    for name in (*OFFICIAL_FILES, ".git/HEAD", "experiments/run.json"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(name)
    copy = copy_official(check_official(checkout), tmp_path / "scratch" / "cores")
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()) == sorted(OFFICIAL_FILES)
