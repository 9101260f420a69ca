"""The app's headless part: what its screens compute off the UI thread (session, search, watcher, file_report),
plain functions and dataclasses over the core that never import Textual or rich."""
