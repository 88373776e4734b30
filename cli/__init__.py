"""The `haltproof` command line."""
