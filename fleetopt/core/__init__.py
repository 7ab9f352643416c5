"""Pure math on numbers and arrays: queueing, KV arithmetic, service model, sizing, sweep, savings.

Nothing in ``fleetopt.core`` reads files, prints, or imports typer, rich or yaml
(``tests/test_layers.py`` checks this).
"""
