"""``python -m workbench`` runs the command line."""

from __future__ import annotations

from workbench.cli import main

raise SystemExit(main())
