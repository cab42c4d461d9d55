"""Planted truths and planted nulls at a page's design: the data on which a check's power and size are measured.

Each function returns what a page's rule reads (coupling times, chains of a summary), drawn from a law whose answer
is known, at the page's own design (lengths, pairs, budget, chains, steps), so that `checks.calibrate` can run the
page's rule on replicates of it. One module per kind of claim, imported by the pages that make it: `growth` (00,
02), `chains` (00), `rectangles` (00, 01), `traps` (03), `basin` (04), `margin_theorem` (05), `mixing` (06).

This package imports none of them, so that a page's cache key (`book.closure`: the modules it imports) covers only
the calibrations it runs: editing `measures/political.py` re-executes 04 and no other page.
"""
