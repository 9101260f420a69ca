"""The explorer's widgets, one per module: source view, chunk table and detail, docs tree, strategy bar, panes."""
