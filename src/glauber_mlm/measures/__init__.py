"""What the book measures on a model or a chain: the rectangle test (`rectangle`, `compatibility`), influence
and margins (`influence`, `margins`), meaning (`semantic`) and the political basin (`political`)."""
