"""The exhaustive engine, sweeps, replay, reports and the command line."""
