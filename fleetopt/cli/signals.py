"""SIGTERM and SIGINT (Ctrl-C) end a command cleanly.

Within :func:`interruptible` both signals raise :class:`Interrupted` in the command, which unwinds
it: every writer removes its temporary file on the way out (fleetopt.io.files), so the outputs stay
as they were. A DuckDB query does not return to Python until it ends, so the signal also reaches a
watcher thread (through ``signal.set_wakeup_fd``, written by the C-level handler even while Python
waits) that interrupts the running queries (fleetopt.io.logs.interrupt_queries). The CLI then says
what was written and what was left unchanged, and exits 128 + the signal number (130 for Ctrl-C,
143 for SIGTERM), as a shell reports a command a signal ended.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """The command was stopped by a signal. A BaseException: no handler of errors catches it on the
    way out. ``writing``: the outputs being written at that moment (left unchanged)."""

    def __init__(self, signum: int, writing: tuple[Path, ...] = ()):
        super().__init__(signum)
        self.signum = signum
        self.writing = writing

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def message(self, written: list[Path]) -> str:
        """``interrupted (SIGTERM): …`` with what was written before and what was left unchanged."""
        name = "Ctrl-C" if self.signum == signal.SIGINT else signal.Signals(self.signum).name
        parts = []
        if written:
            parts.append(f"{', '.join(str(p) for p in written)} had been written before it")
        if self.writing:
            parts.append(
                f"{', '.join(str(p) for p in self.writing)} not written: left as it was, with no "
                "temporary file behind"
            )
        if not parts:
            parts.append("no file was written or changed")
        return f"interrupted ({name}): " + "; ".join(parts)


#: The signals received by the command running, or the last one (recorded by its watcher thread as
#: they arrive): an interrupted DuckDB query may surface as DuckDB's own error before Python's
#: handler runs. Each command gets its own list (a late watcher cannot touch the next command's).
_RECEIVED: dict[str, list[Interrupted]] = {"command": []}


def received() -> Interrupted | None:
    """The first SIGINT/SIGTERM the running (or last) command received, or None."""
    signals = _RECEIVED["command"]
    return signals[0] if signals else None


def _watch(read_end: int, signals: list[Interrupted]) -> None:
    """Record SIGINT and SIGTERM and interrupt the running DuckDB queries whenever one arrives (the
    pipe's bytes are signal numbers); ends when the write end is closed."""
    from fleetopt.io.files import WRITING

    try:
        while True:
            data = os.read(read_end, 64)
            if not data:
                return
            for byte in data:
                if byte in _SIGNALS:
                    signals.append(Interrupted(byte, tuple(WRITING)))
                    from fleetopt.io.logs import interrupt_queries

                    interrupt_queries()
    finally:
        os.close(read_end)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM raise :class:`Interrupted` (in the main thread only:
    elsewhere, e.g. under a test runner's worker thread, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from fleetopt.io.files import WRITING, WRITTEN

    WRITTEN.clear()
    signals: list[Interrupted] = []
    _RECEIVED["command"] = signals

    def handler(signum: int, frame: object) -> None:
        # recorded as well as raised: DuckDB runs this handler itself while a query runs
        # (PyErr_CheckSignals), swallows the exception and raises its own "Query interrupted",
        # possibly before the watcher thread has read the signal
        interrupted = Interrupted(signum, tuple(WRITING))
        signals.append(interrupted)
        raise interrupted

    previous = {number: signal.signal(number, handler) for number in _SIGNALS}
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_end, signals), name="fleetopt-signals", daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        for number, old in previous.items():
            signal.signal(number, old)
        os.close(write_end)
