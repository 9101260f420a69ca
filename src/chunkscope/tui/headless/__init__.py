"""tui/headless"""
