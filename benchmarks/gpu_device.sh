#!/usr/bin/env bash
# Run benchmarks/gpu.py on an offline GPU machine, from the repository root there, with the kit that
# `python benchmarks/gpu_kit.py` packed here (default folder .gpu: carry it along with the working tree).
#
#   bash benchmarks/gpu_device.sh [flags of benchmarks/gpu.py]
#
# It installs the kit's wheels into a scratch folder (never into the machine's Python), runs the benchmark with
# --keep, --out and, when the kit holds the official code, --official, then packs what the run stored
# (book/artifacts, book/results) into RESULTS/runs.tar.gz; unpack it in your checkout with
# `tar -xzf runs.tar.gz`.  RESULTS is $GPU_RESULTS when set (a folder that comes back from the GPU machine),
# else outputs/gpu; the kit is $GPU_KIT (default .gpu) and the Python $PYTHON (default python3).  The report is
# RESULTS/gpu.txt, the whole log RESULTS/log.txt.
# Example, the steps bounded to nine minutes: bash benchmarks/gpu_device.sh --only matmul,markov,modadd,official --budget 540
set -euo pipefail
kit=${GPU_KIT:-.gpu}
results=${GPU_RESULTS:-outputs/gpu}
python=${PYTHON:-python3}
if [ ! -d "$kit/whl" ]; then
    echo "no kit at $kit/whl: run 'python benchmarks/gpu_kit.py' where pip can reach the index, and carry $kit" >&2
    exit 2
fi
mkdir -p "$results"
site=$(mktemp -d /tmp/gpu-site.XXXXXX)
wheels=("$kit"/whl/*.whl)
if [ -e "${wheels[0]}" ]; then  # a kit for a machine that has every package holds none
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${wheels[@]}"
fi
# the repository root too: the book's library is not installed there, it travels with the working tree
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
official=()
if [ -f "$kit/cores/markov.py" ]; then official=(--official "$kit/cores"); fi
marker=$(mktemp /tmp/gpu-start.XXXXXX)
status=0
"$python" benchmarks/gpu.py --keep --out "$results/gpu.txt" "${official[@]}" "$@" 2>&1 | tee "$results/log.txt" || status=$?
find book/artifacts book/results book/variants_table.md -type f -newer "$marker" -print0 2>/dev/null \
    | tar --null -czf "$results/runs.tar.gz" -T -
echo "stored runs: $results/runs.tar.gz ($(tar -tzf "$results/runs.tar.gz" | wc -l) files); report: $results/gpu.txt"
exit "$status"
