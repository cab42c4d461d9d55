"""One-off builds reached from the CLI: the data in data/ (`data`) and the embedded model (`train`)."""
