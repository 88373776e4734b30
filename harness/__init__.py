"""The seed systems as real, runnable Python code that haltproof proves."""
