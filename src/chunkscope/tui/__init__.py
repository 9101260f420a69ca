"""The chunkscope explorer: a Textual app over the core (source beside its chunks, live tuning, queries, lint).

Nothing in the core imports this package; this package only calls the core. ``app.run_app`` is the entry point.
"""
