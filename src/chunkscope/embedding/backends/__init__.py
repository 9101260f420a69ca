"""One module per embedding backend: its `EmbedderSpec` subclass and the encoders that run it (the list of backends
is `chunkscope.embedding.registry`)."""
