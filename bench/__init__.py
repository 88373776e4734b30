"""The G(Q, B, A) benchmark of haltproof (issue 7): run `python -m bench` from the repo root.

Not an installed package: see bench/README.md.
"""
