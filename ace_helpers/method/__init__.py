"""The method wing: Algorithmic Core Extraction on any torch model.

Gramians and the balanced core (:mod:`.core`), comparing cores (:mod:`.compare`), linear operators in
core coordinates (:mod:`.operators`), rank scans (:mod:`.scans`), keep / remove / flip interventions
through nnsight (:mod:`.interventions`), core stitching (:mod:`.stitching`), statistics and fits
(:mod:`.stats`, :mod:`.fits`), the alternatives to ACE (:mod:`.baselines`, :mod:`.subspaces`) and the
input checks every wing uses (:mod:`.checks`).  Nothing here knows the book, a preset or a chapter.
"""
