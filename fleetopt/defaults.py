"""Defaults shared by the API and the CLI (no heavy imports here: the CLI reads them at start-up)."""

#: The papers' Llama-3-70B / A100-80GB TP8 calibration (FACTS §1).
DEFAULT_SERVING = "llama-3-70b-a100-80gb-tp8"
#: Arrival rate when the workload has no timestamps and none is given, req/s (FleetOpt §7.1).
DEFAULT_RATE_PER_S = 1000.0
#: The papers' long-pool (and homogeneous) context window, tokens.
DEFAULT_LONG_CONTEXT_TOKENS = 65_536
