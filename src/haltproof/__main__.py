"""`python -m haltproof ARGS` is the `haltproof ARGS` command."""

from haltproof.explorer.cli import main

raise SystemExit(main())
