"""The samplers: each an `(init, step)` kernel (`kernels`) run by one driver loop that records, shows progress and
checkpoints (`driver`, `checkpoint`), with a public face per chain: Glauber (`sampling`), coupled Glauber
(`coupling`), Metropolis–Hastings on the PLL energy (`metropolis`), L-lag couplings (`lag_coupling`) and parallel
tempering (`tempering`)."""
