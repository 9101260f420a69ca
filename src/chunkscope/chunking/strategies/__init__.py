"""The built-in chunking strategies, one module each; `chunkscope.chunking.registry` names them."""
