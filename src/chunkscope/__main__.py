"""``python -m chunkscope`` runs the command line."""

from chunkscope.cli import main

raise SystemExit(main())
