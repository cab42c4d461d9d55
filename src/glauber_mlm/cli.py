"""`glauber-mlm` command line: each subcommand is the `main(argv)` of one library module."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "build-data": ("glauber_mlm.build.data", "build the starting passages, political text and training text in data/"),
    "train-model": ("glauber_mlm.build.train", "train the embedded default MLM into data/models/"),
    "run": ("glauber_mlm.book", "execute one notebook with papermill into the book"),
    "book": ("glauber_mlm.book", "execute the notebooks whose inputs changed and build the Jupyter Book"),
    "verify": ("glauber_mlm.book", "re-execute the published notebooks in a scratch folder and compare every table"),
    "plan": ("glauber_mlm.book.plan", "print the forward rows, FLOPs and estimated wall time of a run, per notebook"),
    "new": ("glauber_mlm.book.new", "write a new result page, its test, toc entry, intro row, rules entry and plan row"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        lines = [f"  {name:<12} {help_}" for name, (_, help_) in COMMANDS.items()]
        print("usage: glauber-mlm COMMAND [options]\n\ncommands:\n" + "\n".join(lines), file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv)


if __name__ == "__main__":
    sys.exit(main())
