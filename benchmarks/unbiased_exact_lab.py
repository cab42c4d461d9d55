"""The exact lab of the unbiased estimator (`pages.planted.unbiased.exact_lab`) at full size: 400 intervals of 50
replicates each on a Potts chain and on the embedded model's chain restricted to 2 candidates at 4 sites (τ = 1, 0.5,
0.25), judged against the exact π(h), the exact meeting law and the plain chain's exact asymptotic variance.

    PYTHONPATH=src .venv/bin/python benchmarks/unbiased_exact_lab.py   # ~3 min on one core
"""
import numpy as np
import pandas as pd
import torch

from glauber_mlm import exact, load_mlm
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.pages.planted.unbiased import exact_lab, summary

torch.set_num_threads(1)
rows = []
potts = exact.potts_chain(4, 2, 0.8, field=torch.tensor([0.3, 0.0]))
rows.append(dict(chain="Potts n=4, J=0.8, field (0.3, 0), τ=1; h = 1[x = state 0]",
                 **summary(exact_lab(potts, np.arange(16) == 0, 1.0, 400, 50, seed=0))))
mlm = load_mlm(device="cpu", dtype=torch.float32)
context = sample_passages(mlm, load_passages(), 10, 1, seed=0)[0][0]
sites = torch.tensor([2, 4, 6, 8])
R = exact.restricted(mlm, context, sites, exact.candidate_sets(mlm, context, sites, 2))
greedy, _ = exact.greedy_basin(R)
for tau in (1.0, 0.5, 0.25):
    rows.append(dict(chain=f"embedded model restricted, n=4, k=2, τ={tau:g}; h = 1[x = greedy state]",
                     **summary(exact_lab(R, np.arange(16) == greedy, tau, 400, 50, seed=1))))
pd.set_option("display.width", 250)
print(pd.DataFrame(rows).T.to_string())
