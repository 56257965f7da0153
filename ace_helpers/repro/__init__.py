"""The repro wing: the book's machinery.

Parameters and presets (:mod:`.params`), threads (:mod:`.thread_pools`), a chapter's start (:mod:`.session`), kernel settings and their fingerprint (:mod:`.kernels`,
:mod:`.fingerprint`), artifacts and manifests (:mod:`.artifacts`), claims and verdicts
(:mod:`.report`), executing the notebooks (:mod:`.runbook`), variants and seed checks
(:mod:`.variants`, :mod:`.seed_check`), sweeps on Dask (:mod:`.sweeps`) and the figure style
(:mod:`.style`).
"""
