"""`python -m haltproof ARGS` is the `haltproof ARGS` command."""

from haltproof.cli.main import main

raise SystemExit(main())
