"""Screens of the explorer: the main view, compare mode, help."""
