"""edgepick: choose, prove and run the right LLM configuration for an edge device."""

__version__ = "0.1.0"
