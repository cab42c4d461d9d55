"""The masked language models the chains run on: the Hugging Face adapter (`hf`), the sentence encoder
(`encoder`), the passages chains start from (`passages`) and the cost model of a forward (`roofline`)."""
