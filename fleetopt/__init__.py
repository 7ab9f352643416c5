"""fleetopt: size an LLM-serving fleet analytically before buying it."""

__version__ = "0.1.0"
