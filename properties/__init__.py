"""Property kinds, what "holds" means for each, and the termination analyses."""
