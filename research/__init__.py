"""Research scripts behind the speed model: not shipped, not run by `make bench` (README.md)."""
