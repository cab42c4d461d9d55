"""What a notebook page imports: `Run` (parameters, tables, provenance, the result box), its checks and their
calibration on planted truths (`checks`, `planted`), the verdict rule (`verdict`) and the figures (`plots`)."""
