"""Chunking: the chunk model, parameters, embed prefixes, the strategy base, the registry, the drivers."""
