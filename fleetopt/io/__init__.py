"""Loading and validating profiles and workloads into frozen dataclasses; writing plans.

All file formats and unit conversions live here.
"""
