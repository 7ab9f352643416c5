"""``python -m fleetopt``."""

from fleetopt.cli import main

main()
