"""The engines behind `chunkscope.retrieval.engine.Engine`: Qdrant Edge in the process (`edge`), qdrant-client
for a Qdrant server (`client`)."""
