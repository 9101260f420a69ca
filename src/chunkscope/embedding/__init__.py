"""Texts to vectors: which model (`spec`, `registry`, `backends/`), where it runs (`device`), the vector cache
(`cache`) and the `Embedder` that ties them together (`embedder`)."""
