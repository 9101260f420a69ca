"""The built-in chunking strategies, one module each; `chunkscope.chunking.chunk` holds the registry."""
