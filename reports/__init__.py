"""Everything haltproof writes about a check: the report model and each output format."""
