"""Pack what ``benchmarks/gpu.py`` needs on an offline GPU machine: wheels for its Python, and the official code.

A GPU machine lent for a benchmark often has CUDA, PyTorch and the scientific stack but no network and none of
the book's other packages.  This script, run here (with the book's environment and access to the package index),
writes a kit folder to carry there:

* ``whl/``: a wheel for each distribution the benchmark imports, directly or through another one, at the version
  installed here (``pip download --no-deps --only-binary=:all:`` for the target's Python and platform; a
  pure-Python package published only as a source archive is built into a wheel here).  Left out: the GPU stack
  (torch, triton, the CUDA libraries; the target's own build must be used) and every distribution the target
  already has (``--have``: its ``pip list`` or ``pip freeze``, or names one per line);
* ``cores/``: with ``--official PATH``, a copy of the paper's code release (without ``.git``) for the official
  step;
* ``wheels.txt``: what was packed and what was left out, and why.

On the GPU machine, ``bash benchmarks/gpu_device.sh [gpu.py flags]`` installs the wheels into a scratch folder
and runs the benchmark.  The distributions come from this environment's metadata (``Requires-Dist``, markers
evaluated for the target's Python on Linux, without extras), starting from what the benchmark's steps import.

Usage::

    python benchmarks/gpu_kit.py [--out .gpu] [--have target-pip-list.txt] [--official ~/src/cores] [--python 3.12]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement

from ace_helpers.repro.official import check_official, copy_official

#: what the benchmark's steps import: the chapters' trainers and runs, the sweep command, the language-model
#: chapter's library (the ``tests`` step) and pytest, and the notebook kernel that the ``variants`` step runs the
#: chapters in (papermill, the kernel, the notebooks' display libraries)
STEP_MODULES = ("ace_helpers.chapters.markov_run.run", "ace_helpers.chapters.modadd.__main__",
                "ace_helpers.chapters.sweep", "ace_helpers.variants", "ace_helpers.chapters.llm_agreement")  # fmt: skip
TEST_DISTS = ("pytest",)
NOTEBOOK_DISTS = ("papermill", "ipykernel", "myst-nb", "jupytext", "nbformat", "matplotlib-inline")
#: never carried: the target's own CUDA build of these must be used
GPU_STACK = re.compile(r"^(torch|torchvision|torchaudio|triton|nvidia-.*|cuda-.*)$")
#: the manylinux tags pip is told the target accepts (pip matches each exactly)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "linux_x86_64")  # fmt: skip


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_have(path: Path) -> set[str]:
    """The canonical names of the distributions a target has, from its ``pip list`` / ``pip freeze`` output or a
    list of names (one per line, or separated by commas): each entry's first word; header and ``---`` lines are
    skipped."""
    if not path.is_file():
        raise SystemExit(f"--have {path}: no such file (give the target's `pip list` or `pip freeze`, or its names)")
    names = set()
    for entry in re.split(r"[\n,]", path.read_text()):
        words = entry.split()
        name = re.split(r"==|@|\(", words[0])[0].strip() if words else ""
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) and name.lower() not in ("package", "version"):
            names.add(canonical(name))
    return names


def imported_dists(modules: tuple[str, ...] = STEP_MODULES) -> set[str]:
    """The canonical names of the distributions whose top-level packages importing ``modules`` loads."""
    before = set(sys.modules)
    for module in modules:
        importlib.import_module(module)
    owners = md.packages_distributions()
    tops = {name.split(".")[0] for name in set(sys.modules) - before}
    return {canonical(d) for top in tops for d in owners.get(top, [])}


def requirements_closure(roots: set[str], python: str) -> dict[str, str]:
    """``{canonical name: installed version}`` of ``roots`` and every distribution they require here, recursively
    (markers evaluated for Python ``python`` on Linux x86-64, no extras).  A requirement not installed here is
    skipped: this environment is the reference of what runs."""
    env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix", "extra": ""}  # fmt: skip
    found: dict[str, str] = {}
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        found[name] = dist.version
        for text in dist.requires or []:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is None or Marker(str(req.marker)).evaluate(env):
                todo.append(canonical(req.name))
    return found


def plan(found: dict[str, str], have: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(to pack, left out with the reason) from the closure ``found`` and the target's names ``have``."""
    pack, left = {}, {}
    for name, version in sorted(found.items()):
        if name == "ace-helpers":
            left[name] = "the book's own library: it travels with the working tree"
        elif GPU_STACK.match(name):
            left[name] = "the GPU stack: the target's own CUDA build is used"
        elif name in have:
            left[name] = "the target has it"
        else:
            pack[name] = version
    return pack, left


def download(name: str, version: str, python: str, dest: Path) -> str:
    """Put a wheel of ``name==version`` for the target into ``dest``: a binary or universal wheel from the index,
    else one built here from the source archive (pure Python only).  Returns how it was obtained."""
    pin = f"{name}=={version}"
    args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", python,
            "--implementation", "cp", *[f"--platform={p}" for p in PLATFORMS], "-d", str(dest), pin]  # fmt: skip
    if subprocess.run(args, capture_output=True, text=True, check=False).returncode == 0:
        return "wheel from the index"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), pin],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if built.returncode:
        raise SystemExit(f"no wheel of {pin} for Python {python} on manylinux x86-64, and none could be built here:\n"
                         f"{built.stderr[-1500:]}")  # fmt: skip
    wheels = sorted(dest.glob(f"{re.sub('-', '_', name)}-{version}-*.whl"), key=lambda p: p.stat().st_mtime)
    if wheels and not wheels[-1].name.endswith("-none-any.whl"):
        raise SystemExit(f"{pin} has no wheel for Python {python} on the index and is not pure Python: "
                         f"{wheels[-1].name} was built for this machine only")  # fmt: skip
    return "wheel built here from its source archive (pure Python)"


def main(argv: list[str] | None = None) -> None:
    """Parse the flags, check them before any download, write the kit."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(".gpu"), help="the kit folder (default: .gpu, ignored by git)")
    ap.add_argument("--have", type=Path, help="the target's `pip list` / `pip freeze` (or names): not packed")
    ap.add_argument("--official", type=Path, help="a checkout of the paper's code release, copied to OUT/cores")
    ap.add_argument("--python", default="3.12", help="the target's Python, major.minor (default: 3.12)")
    ap.add_argument("--no-variants", action="store_true", help="only the training and test steps' packages: no notebook "
                    "kernel for the variants step (a kit about 30 MiB smaller)")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"3\.\d{1,2}", args.python):
        raise SystemExit(f"--python {args.python!r}: give the target's Python as major.minor, such as 3.12")
    have = read_have(args.have) if args.have is not None else set()
    official = check_official(args.official) if args.official is not None else None
    roots = imported_dists() | set(TEST_DISTS) | (set() if args.no_variants else {canonical(d) for d in NOTEBOOK_DISTS})
    found = requirements_closure(roots, args.python)
    pack, left = plan(found, have)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="whl-", dir=args.out))  # the kit's wheels are replaced as a whole
    try:
        lines = [f"# wheels for Python {args.python}, manylinux x86-64 ({len(pack)} packed, {len(left)} left out)"]
        lines += [f"{name}=={version}: {download(name, version, args.python, tmp)}" for name, version in pack.items()]
    except BaseException:
        shutil.rmtree(tmp)
        raise
    lines += [f"# left out: {name}=={found[name]}: {why}" for name, why in left.items()]
    shutil.rmtree(args.out / "whl", ignore_errors=True)
    tmp.rename(args.out / "whl")
    if official is not None:
        shutil.rmtree(args.out / "cores", ignore_errors=True)
        copy_official(official, args.out / "cores")
    (args.out / "wheels.txt").write_text("\n".join(lines) + "\n")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out} ({size / 2**20:.1f} MiB): {len(pack)} wheels, {len(left)} left out; see {args.out / 'wheels.txt'}")


if __name__ == "__main__":
    main()
