"""The rules themselves, one class per rule, grouped by what they look at; the registry lists their instances."""
