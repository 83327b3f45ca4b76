"""The `edgepick` command line. Each `cmd_*.py` module here registers its own commands."""
