"""The built-in chunking strategies, one module each; `chunkscope.chunk` holds the registry."""
