"""Incident scenarios, one module each; every module has ``NAME`` and ``run(ctx)``."""
