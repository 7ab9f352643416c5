"""The simulator's engines: who starts when, request by request and iteration by iteration.

:func:`fcfs_start_times` and :func:`dispatch_known_service` serve the request-level models
(service times known on arrival); :class:`PhysicalPool` is the iteration-level ``physical``
engine. See :mod:`fleetopt.core.simulate` for the models, the dispatch policies and what is
measured.

Speed: the loops that cannot be vectorized (a heap of server free times, least-loaded dispatch)
run compiled by numba when it is installed (``@jit``: ``numba.njit(cache=True)``, compiled once
per machine and cached beside this file). Each compiled kernel is also plain Python over numpy
arrays and scalars; without numba (or with ``FLEETOPT_JIT=0``) that same source runs
interpreted, so both give bit-identical results (``tests/test_simulate.py`` checks it).
"""

from __future__ import annotations

import heapq
import math
import os
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from fleetopt.core.simulate import SimulatedPool


# --------------------------------------------------------------------------------------------
# Compiled kernels (numba when installed; the same source interpreted otherwise)
# --------------------------------------------------------------------------------------------

#: ``FLEETOPT_JIT=0`` runs every engine in plain Python (today's interpreted code paths).
JIT_ENV = "FLEETOPT_JIT"
_COMPILED: dict[str, Any] = {}


def jit_available() -> bool:
    """Whether the compiled kernels are used: numba importable and ``FLEETOPT_JIT`` not ``0``."""
    if os.environ.get(JIT_ENV, "1") == "0":
        return False
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _compiled(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` compiled by numba (once per process; the machine code is cached on disk)."""
    compiled = _COMPILED.get(kernel.__name__)
    if compiled is None:
        import numba
        from numba.extending import register_jitable

        if not _COMPILED:  # once per process: the helpers compile into the kernels that call them
            for helper in _KERNEL_HELPERS:
                register_jitable(helper)
        compiled = _COMPILED[kernel.__name__] = numba.njit(cache=True, nogil=True)(kernel)
    return compiled


def load_kernels() -> bool:
    """Compile (first time on a machine) or load from the cache every kernel now, on tiny inputs;
    returns whether they are in use. Benchmarks call it so timings are of the steady state."""
    if not jit_available():
        return False
    one, two = np.ones(2), np.zeros(2, np.int64)
    _compiled(_fcfs_heap_kernel)(np.zeros(1), one, one, np.empty(2))
    _compiled(_least_loaded_kernel)(one, one, 1, 1, np.empty(2))
    ones = np.ones(2, np.int64)
    outputs = [np.empty(2) for _ in range(4)]
    _compiled(_physical_kernel)(
        one, two, ones, ones, np.zeros(2), 0.01, 0.001, 0.0, 512, 1, 1, _POOLED, *outputs
    )
    return True


def _sift_down(heap: np.ndarray, size: int, value: Any) -> None:
    """Put ``value`` at the root of the min-heap ``heap[:size]`` (replacing it) and sift it down."""
    position = 0
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] < value:
            heap[position] = heap[child]
            position = child
        else:
            break
    heap[position] = value


def _sift_up(heap: np.ndarray, size: int, value: Any) -> None:
    """Append ``value`` to the min-heap ``heap[:size]`` (capacity permitting) and sift it up."""
    position = size
    while position > 0 and heap[(position - 1) // 2] > value:
        heap[position] = heap[(position - 1) // 2]
        position = (position - 1) // 2
    heap[position] = value


def _sift_down_pair(keys: np.ndarray, items: np.ndarray, size: int, key: float, item: int) -> None:
    """:func:`_sift_down` on a heap of ``keys`` carrying ``items`` alongside."""
    position = 0
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] < key:
            keys[position], items[position] = keys[child], items[child]
            position = child
        else:
            break
    keys[position], items[position] = key, item


def _sift_up_pair(keys: np.ndarray, items: np.ndarray, size: int, key: float, item: int) -> None:
    """:func:`_sift_up` on a heap of ``keys`` carrying ``items`` alongside."""
    position = size
    while position > 0 and keys[(position - 1) // 2] > key:
        parent = (position - 1) // 2
        keys[position], items[position] = keys[parent], items[parent]
        position = parent
    keys[position], items[position] = key, item


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array``, doubled when ``size`` fills it."""
    return np.concatenate((array, np.empty_like(array))) if size == array.shape[0] else array


def _fcfs_heap_kernel(
    heap: np.ndarray, arrivals: np.ndarray, services: np.ndarray, starts: np.ndarray
) -> None:
    """FCFS on ``heap`` (a min-heap of the c server free times, updated in place): each request
    starts at max(arrival, earliest free time), and that server is then free at start + service."""
    for k in range(arrivals.shape[0]):
        arrival = arrivals[k]
        free = heap[0]
        begin = arrival if arrival >= free else free
        starts[k] = begin
        _sift_down(heap, heap.shape[0], begin + services[k])


def _least_loaded_kernel(
    arrivals: np.ndarray, services: np.ndarray, instances: int, slots: int, starts: np.ndarray
) -> None:
    """Least-loaded dispatch with known service times (see :func:`dispatch_known_service`).

    The target is the instance with the fewest requests in system, ties to the lowest index: the
    top of a heap of keys load·n + i whose stale entries (load changed since) are skipped. Requests
    leave their instance's count when their service ends (a heap of end times; the order in which
    equal end times leave does not change the counts an arrival sees).
    """
    load = np.zeros(instances, np.int64)
    by_load = np.arange(instances + 1024, dtype=np.int64)  # keys 0·n + i first: already a heap
    loads_size = instances
    leave_time = np.empty(1024)
    leave_instance = np.empty(1024, np.int64)
    leave_size = 0
    servers = np.zeros((instances, slots))
    for k in range(arrivals.shape[0]):
        arrival = arrivals[k]
        while leave_size > 0 and leave_time[0] <= arrival:
            instance = leave_instance[0]
            leave_size -= 1
            _sift_down_pair(
                leave_time, leave_instance, leave_size, leave_time[leave_size], leave_instance[leave_size]
            )
            load[instance] -= 1
            by_load = _grown(by_load, loads_size)
            _sift_up(by_load, loads_size, load[instance] * instances + instance)
            loads_size += 1
        while by_load[0] // instances != load[by_load[0] % instances]:  # pop stale tops
            loads_size -= 1
            _sift_down(by_load, loads_size, by_load[loads_size])
        target = by_load[0] % instances
        heap = servers[target]
        free = heap[0]
        begin = arrival if arrival >= free else free
        starts[k] = begin
        end = begin + services[k]
        _sift_down(heap, slots, end)  # the target's earliest-free server now frees at ``end``
        load[target] += 1
        by_load = _grown(by_load, loads_size)
        _sift_up(by_load, loads_size, load[target] * instances + target)
        loads_size += 1
        leave_time = _grown(leave_time, leave_size)
        leave_instance = _grown(leave_instance, leave_size)
        _sift_up_pair(leave_time, leave_instance, leave_size, end, target)
        leave_size += 1


# --------------------------------------------------------------------------------------------
# Request-level engines
# --------------------------------------------------------------------------------------------


def fcfs_start_times(arrival_s: np.ndarray, service_s: np.ndarray, servers: int) -> np.ndarray:
    """Service start times of a FCFS queue with ``servers`` identical servers (exact, O(N log N)).

    Requests (arrival times non-decreasing, service times > 0) start at max(arrival, earliest
    server free time). Fast path: assuming nobody waits, request i finds
    i − #{j : a_j + S_j ≤ a_i} requests in service; up to the first i where that reaches c the
    assumption holds exactly. From there a heap of the c server free times takes over.
    """
    count = arrival_s.size
    start = arrival_s.copy()
    if count == 0:
        return start
    departure = arrival_s + service_s
    finished = np.searchsorted(np.sort(departure), arrival_s, side="right")
    busy_seen = np.arange(count) - finished
    conflicts = np.flatnonzero(busy_seen >= servers)
    if conflicts.size == 0:
        return start
    first = int(conflicts[0])
    earlier = np.sort(departure[:first])[-servers:]
    if jit_available():
        heap_array = np.concatenate((np.zeros(servers - earlier.size), earlier))  # sorted: a heap
        starts_array = np.empty(count - first)
        _compiled(_fcfs_heap_kernel)(heap_array, arrival_s[first:], service_s[first:], starts_array)
        start[first:] = starts_array
        return start
    heap = [0.0] * (servers - earlier.size) + earlier.tolist()
    heapq.heapify(heap)
    arrivals = arrival_s[first:].tolist()
    services = service_s[first:].tolist()
    starts = [0.0] * len(arrivals)
    replace = heapq.heapreplace
    for k, (arrival, service) in enumerate(zip(arrivals, services, strict=True)):
        free = heap[0]
        begin = arrival if arrival >= free else free
        starts[k] = begin
        replace(heap, begin + service)
    start[first:] = starts
    return start


def dispatch_known_service(
    arrival_s: np.ndarray, service_s: np.ndarray, instances: int, slots: int, dispatch: str
) -> np.ndarray:
    """Start times under pooled, round-robin or least-loaded dispatch (service times known)."""
    if dispatch == "pooled":
        return fcfs_start_times(arrival_s, service_s, instances * slots)
    if dispatch == "round-robin":
        start = np.empty_like(arrival_s)
        owner = np.arange(arrival_s.size) % instances
        for instance in range(min(instances, arrival_s.size)):
            mine = owner == instance
            start[mine] = fcfs_start_times(arrival_s[mine], service_s[mine], slots)
        return start
    # least-loaded: the instance with the fewest requests in system (in service or queued), ties
    # to the lowest index; a heap of (load, instance) entries, stale ones skipped lazily.
    if jit_available():
        starts_array = np.empty(arrival_s.size)
        _compiled(_least_loaded_kernel)(
            np.ascontiguousarray(arrival_s, dtype=np.float64),
            np.ascontiguousarray(service_s, dtype=np.float64),
            instances,
            slots,
            starts_array,
        )
        return starts_array
    load = [0] * instances
    by_load = [(0, i) for i in range(instances)]
    server_heaps: list[list[float]] = [[0.0] * slots for _ in range(instances)]
    leaving: list[tuple[float, int]] = []
    starts = [0.0] * arrival_s.size
    push, pop = heapq.heappush, heapq.heappop
    for k, (arrival, service) in enumerate(zip(arrival_s.tolist(), service_s.tolist(), strict=True)):
        while leaving and leaving[0][0] <= arrival:
            instance = pop(leaving)[1]
            load[instance] -= 1
            push(by_load, (load[instance], instance))
        while by_load[0][0] != load[by_load[0][1]]:
            pop(by_load)
        target = by_load[0][1]
        heap = server_heaps[target]
        free = heap[0]
        begin = arrival if arrival >= free else free
        starts[k] = begin
        heapq.heapreplace(heap, begin + service)
        load[target] += 1
        push(by_load, (load[target], target))
        push(leaving, (begin + service, target))
    return np.asarray(starts)


_CHUNK_CHANGE, _PREFILL_END, _DEPART = 0, 1, 2


def _steps_to_boundary(segment_time: float, iteration_s: float, now: float) -> int:
    """Iterations from a busy instance's segment start to its first boundary at or after ``now``."""
    steps = math.ceil((now - segment_time) / iteration_s)
    if steps < 0:
        steps = 0
    if segment_time + steps * iteration_s < now:
        steps += 1
    return steps


def _soonest_free_instance(
    n: int, slots: int, committed: Any, active: Any, seg_time: Any, iter_s: Any, now: float
) -> int:
    """The instance with a free slot whose next iteration starts first, lowest index on ties
    (``pooled`` dispatch; lists or arrays)."""
    target, best = -1, math.inf
    for j in range(n):
        if committed[j] >= slots:
            continue
        if active[j] > 0:
            ahead = math.ceil((now - seg_time[j]) / iter_s[j])
            start_at = seg_time[j] + (ahead if ahead > 0 else 0.0) * iter_s[j]
        else:
            start_at = now
        if start_at < best:
            target, best = j, start_at
    return target


class PhysicalPool:
    """Iteration-level simulation of one pool's instances (the ``physical`` service model).

    An iteration of an instance costs W + H·d + τ·p (+ the KV-read excess of each decoding sequence,
    max(0, κ_read·L − H), where the pool sets a floor): d sequences decoding, p prompt tokens being
    prefilled (each prefilling request contributes its chunk: ``chunk`` tokens, its remainder on
    its last prefill iteration). A request admitted at boundary b prefills in iterations
    b+1 … b+P, decodes in b+P+1 … b+I, has its first token at the end of iteration b+P+1 and leaves
    at boundary b+I. Per instance the state is a segment (time T at boundary K, so boundary b
    falls at T + (b − K)·t while nothing changes); events happen only where the batch changes
    (admission, last chunk, end of prefill, departure), so the cost is O(N log N) in the number of
    requests, not in the number of iterations.
    """

    def __init__(
        self,
        pool: SimulatedPool,
        arrival_s: np.ndarray,
        input_tokens: np.ndarray,
        prefill_iterations: np.ndarray,
        iterations: np.ndarray,
        dispatch: str,
        progress: Callable[[int], None] | None,
    ) -> None:
        self.w = (
            pool.iteration_base_s
            if pool.physical_iteration_base_s is None
            else pool.physical_iteration_base_s
        )
        self.h = pool.iteration_per_slot_s
        self.tau = pool.prefill_per_token_s
        self.chunk = pool.prefill_chunk_tokens
        self.slots = pool.slots_per_instance
        self.n = pool.instances
        self.dispatch = dispatch
        self.progress = progress
        self.arrival = arrival_s.tolist()
        self.prefill_iterations = prefill_iterations.tolist()
        self.last_chunk = (input_tokens - np.maximum(prefill_iterations - 1, 0) * self.chunk).tolist()
        self.iterations = iterations.tolist()
        # what a decoding sequence costs beyond H: its KV read at its total length L (0 without a floor)
        totals = input_tokens + iterations - prefill_iterations
        self.extra = np.maximum(0.0, pool.kv_read_s_per_token * totals - self.h).tolist()
        count = arrival_s.size
        self.slot_start = [0.0] * count
        self.admission = [0.0] * count
        self.first_token = [0.0] * count
        self.departure = [0.0] * count
        n = self.n
        # per-instance state in plain lists (a numpy element access costs ~4× a list's)
        self.seg_time = [0.0] * n
        self.seg_boundary = [0] * n
        self.iter_s = [self.w] * n
        self.active = [0] * n
        self.committed = [0] * n  # active + reserved
        self.load = [0] * n  # committed + queued at the instance
        self.decoding = [0] * n
        self.extra_decode_s = [0.0] * n
        self.prefill_tokens = [0] * n
        self.changes: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.first_tokens: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.reserved: list[list[int]] = [[] for _ in range(n)]
        self.scheduled = [-1] * n  # boundary of the instance's live event, −1 = none
        self.version = [0] * n
        self.events: list[tuple[float, int, int, int]] = []
        self.queues = [deque() for _ in range(1 if dispatch == "pooled" else n)]
        self.free_slots = n * self.slots
        self.idle = list(range(n))  # heap of instances that were idle when pushed (checked lazily)

    def _schedule(self, i: int, boundary: int) -> None:
        self.version[i] += 1
        self.scheduled[i] = boundary
        when = self.seg_time[i] + (boundary - self.seg_boundary[i]) * self.iter_s[i]
        heapq.heappush(self.events, (when, i, self.version[i], boundary))

    def _boundary(self, i: int, now: float, boundary: int) -> None:
        """Instance ``i`` reaches iteration boundary ``boundary`` at time ``now``."""
        seg_time, seg_boundary, iter_s = self.seg_time[i], self.seg_boundary[i], self.iter_s[i]
        pending = self.first_tokens[i]
        while pending and pending[0][0] <= boundary:
            token_boundary, r = heapq.heappop(pending)
            self.first_token[r] = seg_time + (token_boundary - seg_boundary) * iter_s
        changes = self.changes[i]
        decoding, prefill, extra = self.decoding[i], self.prefill_tokens[i], self.extra_decode_s[i]
        freed = 0
        while changes and changes[0][0] <= boundary:
            _, kind, r = heapq.heappop(changes)
            if kind == _DEPART:
                self.departure[r] = now
                decoding -= 1
                extra -= self.extra[r]
                freed += 1
            elif kind == _PREFILL_END:
                prefill -= self.last_chunk[r]
                decoding += 1
                extra += self.extra[r]
            else:  # _CHUNK_CHANGE: the last, shorter chunk
                prefill += self.last_chunk[r] - self.chunk
        active = self.active[i] - freed
        committed = self.committed[i] - freed
        self.load[i] -= freed
        admitted = self.reserved[i]
        queue = self.queues[0 if self.dispatch == "pooled" else i]
        self.free_slots += freed
        while committed < self.slots and queue:
            r = queue.popleft()
            self.slot_start[r] = now
            admitted.append(r)
            committed += 1
            self.free_slots -= 1
            if self.dispatch == "pooled":
                self.load[i] += 1
        for r in admitted:
            self.admission[r] = now
            p = self.prefill_iterations[r]
            heapq.heappush(changes, (boundary + self.iterations[r], _DEPART, r))
            heapq.heappush(pending, (boundary + p + 1, r))
            if p == 0:
                decoding += 1
                extra += self.extra[r]
                continue
            prefill += self.chunk if p > 1 else self.last_chunk[r]
            heapq.heappush(changes, (boundary + p, _PREFILL_END, r))
            if p > 1 and self.last_chunk[r] != self.chunk:
                heapq.heappush(changes, (boundary + p - 1, _CHUNK_CHANGE, r))
        active += len(admitted)
        admitted.clear()
        self.decoding[i], self.prefill_tokens[i], self.extra_decode_s[i] = decoding, prefill, extra
        self.active[i] = active
        self.committed[i] = committed
        self.seg_time[i] = now
        self.seg_boundary[i] = boundary
        self.iter_s[i] = self.w + self.h * decoding + extra + self.tau * prefill
        if active:
            self._schedule(i, changes[0][0])
        else:
            self.version[i] += 1
            self.scheduled[i] = -1
            heapq.heappush(self.idle, i)

    def _next_boundary(self, i: int, now: float) -> int:
        """The first boundary of busy instance ``i`` at or after ``now``."""
        return self.seg_boundary[i] + _steps_to_boundary(self.seg_time[i], self.iter_s[i], now)

    def _arrive(self, r: int, now: float) -> None:
        if self.dispatch == "pooled":
            if self.free_slots == 0:
                self.queues[0].append(r)
                return
            idle = self.idle
            while idle and self.committed[idle[0]] != 0:
                heapq.heappop(idle)
            if idle:  # an idle instance admits at once: nobody can do better
                self._reserve(heapq.heappop(idle), r, now)
                return
            i = _soonest_free_instance(
                self.n, self.slots, self.committed, self.active, self.seg_time, self.iter_s, now
            )
        else:
            i = self.unpooled_target(r)
            self.load[i] += 1
            if self.committed[i] >= self.slots:
                self.queues[i].append(r)
                return
        self._reserve(i, r, now)

    def unpooled_target(self, r: int) -> int:
        """The instance request ``r`` is sent to by round-robin or least-loaded dispatch (the
        lowest-numbered of those with the fewest requests, queued ones included)."""
        if self.dispatch == "round-robin":
            return r % self.n
        load = self.load
        return load.index(min(load))

    def _reserve(self, i: int, r: int, now: float) -> None:
        """Request ``r`` takes a free slot of instance ``i`` at ``now``; admitted at the next boundary."""
        if self.dispatch == "pooled":
            self.load[i] += 1
        self.free_slots -= 1
        self.slot_start[r] = now
        self.committed[i] += 1
        self.reserved[i].append(r)
        if self.active[i] == 0:
            self.seg_time[i] = now
            self._boundary(i, now, self.seg_boundary[i])
            return
        boundary = self._next_boundary(i, now)
        if boundary == self.seg_boundary[i]:
            self._boundary(i, now, boundary)
        elif boundary < self.scheduled[i]:
            self._schedule(i, boundary)

    def _kernel_fits(self) -> bool:
        """Whether the kernel's int64 heap keys hold this run: (Σ I + max I + 1)·3·N < 2⁶²."""
        count = len(self.arrival)
        if count == 0:
            return False
        total = sum(self.iterations) + max(self.iterations) + 1
        return total * 3 * count < 2**62

    def run(self) -> None:
        if jit_available() and self._kernel_fits():
            self._run_compiled()
            return
        arrivals = self.arrival
        count = len(arrivals)
        events = self.events
        next_arrival = 0
        while next_arrival < count or events:
            if events and (next_arrival >= count or events[0][0] <= arrivals[next_arrival]):
                when, i, version, boundary = heapq.heappop(events)
                if version == self.version[i]:
                    self._boundary(i, when, boundary)
            else:
                self._arrive(next_arrival, arrivals[next_arrival])
                next_arrival += 1
                if self.progress is not None and next_arrival % 4096 == 0:
                    self.progress(4096)
        if self.progress is not None:
            self.progress(count % 4096)

    def _run_compiled(self) -> None:
        """The same schedule by :func:`_physical_kernel`, compiled (progress reported at the end)."""
        count = len(self.arrival)
        outputs = [np.zeros(count) for _ in range(4)]
        dispatch = {"pooled": _POOLED, "round-robin": _ROUND_ROBIN}.get(self.dispatch, _LEAST_LOADED)
        _compiled(_physical_kernel)(
            np.asarray(self.arrival, dtype=np.float64),
            np.asarray(self.prefill_iterations, dtype=np.int64),
            np.asarray(self.last_chunk, dtype=np.int64),
            np.asarray(self.iterations, dtype=np.int64),
            np.asarray(self.extra, dtype=np.float64),
            float(self.w), float(self.h), float(self.tau), int(self.chunk), int(self.slots), int(self.n),
            dispatch, *outputs,
        )  # fmt: skip
        self.slot_start, self.admission, self.first_token, self.departure = outputs
        if self.progress is not None:
            self.progress(count)


# --------------------------------------------------------------------------------------------
# The iteration-level engine as a compiled kernel (the same schedule as PhysicalPool's methods)
# --------------------------------------------------------------------------------------------

_POOLED, _ROUND_ROBIN, _LEAST_LOADED = 0, 1, 2
# counters[...] of the kernel: free slots, idle-heap size, pooled-queue head and tail, events
_FREE, _IDLE_SIZE, _QUEUE_HEAD, _QUEUE_TAIL, _EVENTS = 0, 1, 2, 3, 4


def _row_push(heap: np.ndarray, sizes: np.ndarray, i: int, key: int) -> None:
    """Push ``key`` on the min-heap in row ``i`` of ``heap`` (its size in ``sizes[i]``)."""
    _sift_up(heap[i], sizes[i], key)
    sizes[i] += 1


def _row_pop(heap: np.ndarray, sizes: np.ndarray, i: int) -> int:
    """Pop the smallest key of the min-heap in row ``i``."""
    row = heap[i]
    top = row[0]
    sizes[i] -= 1
    _sift_down(row, sizes[i], row[sizes[i]])
    return top


def _event_before(when: np.ndarray, a: int, b: int) -> bool:
    """Events are ordered by time, then instance (as the tuples (when, i, …) of a heap are)."""
    return when[a] < when[b] or (when[a] == when[b] and a < b)


def _event_sift(events: np.ndarray, where: np.ndarray, when: np.ndarray, size: int, position: int) -> None:
    """Restore the indexed event heap around ``position`` (up, then down)."""
    item = events[position]
    while position > 0:
        parent = (position - 1) // 2
        if not _event_before(when, item, events[parent]):
            break
        events[position] = events[parent]
        where[events[position]] = position
        position = parent
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        if child + 1 < size and _event_before(when, events[child + 1], events[child]):
            child += 1
        if _event_before(when, events[child], item):
            events[position] = events[child]
            where[events[position]] = position
            position = child
        else:
            break
    events[position] = item
    where[item] = position


def _event_remove(
    events: np.ndarray, where: np.ndarray, when: np.ndarray, counters: np.ndarray, i: int
) -> None:
    """Drop instance ``i``'s pending event, if any."""
    position = where[i]
    if position < 0:
        return
    where[i] = -1
    counters[_EVENTS] -= 1
    size = counters[_EVENTS]
    if position == size:
        return
    events[position] = events[size]
    where[events[position]] = position
    _event_sift(events, where, when, size, position)


def _schedule_event(
    events: np.ndarray,
    where: np.ndarray,
    when: np.ndarray,
    counters: np.ndarray,
    scheduled: np.ndarray,
    seg_time: np.ndarray,
    seg_boundary: np.ndarray,
    iter_s: np.ndarray,
    i: int,
    boundary: int,
) -> None:
    """Instance ``i``'s next event is at ``boundary`` (replacing the pending one)."""
    scheduled[i] = boundary
    when[i] = seg_time[i] + (boundary - seg_boundary[i]) * iter_s[i]
    if where[i] < 0:
        position = counters[_EVENTS]
        counters[_EVENTS] += 1
        events[position] = i
        where[i] = position
    _event_sift(events, where, when, counters[_EVENTS], where[i])


def _push_idle(idle: np.ndarray, counters: np.ndarray, i: int) -> np.ndarray:
    """Push instance ``i`` on the idle heap (grown when full); returns the heap."""
    idle = _grown(idle, counters[_IDLE_SIZE])
    _sift_up(idle, counters[_IDLE_SIZE], i)
    counters[_IDLE_SIZE] += 1
    return idle


def _pop_idle(idle: np.ndarray, counters: np.ndarray) -> int:
    top = idle[0]
    counters[_IDLE_SIZE] -= 1
    _sift_down(idle, counters[_IDLE_SIZE], idle[counters[_IDLE_SIZE]])
    return top


def _physical_kernel(
    arrivals: np.ndarray,
    prefill_iterations: np.ndarray,
    last_chunk: np.ndarray,
    iterations: np.ndarray,
    extra: np.ndarray,
    w: float,
    h: float,
    tau: float,
    chunk: int,
    slots: int,
    n: int,
    dispatch: int,
    slot_start: np.ndarray,
    admission: np.ndarray,
    first_token: np.ndarray,
    departure: np.ndarray,
) -> None:
    """:class:`PhysicalPool`'s schedule over arrays (see its methods, which this mirrors step by step).

    Heaps hold int64 keys that order as the Python engine's tuples do: a change (boundary, kind, r)
    is (boundary·3 + kind)·N + r, a first token (boundary, r) is boundary·N + r (N requests; the
    caller checks these fit in 63 bits). The events form an indexed heap with one live entry per
    instance, ordered by (time, instance): the Python engine's superseded entries never act, so
    both pop the live events in the same order.
    """
    count = arrivals.shape[0]
    kinds = 3 * count
    seg_time = np.zeros(n)
    seg_boundary = np.zeros(n, np.int64)
    iter_s = np.full(n, w)
    active = np.zeros(n, np.int64)
    committed = np.zeros(n, np.int64)
    load = np.zeros(n, np.int64)
    decoding = np.zeros(n, np.int64)
    extra_decode = np.zeros(n)
    prefill_tokens = np.zeros(n, np.int64)
    changes = np.empty((n, 3 * slots + 1), np.int64)
    change_sizes = np.zeros(n, np.int64)
    tokens = np.empty((n, slots + 1), np.int64)
    token_sizes = np.zeros(n, np.int64)
    reserved = np.empty((n, slots + 1), np.int64)
    reserved_sizes = np.zeros(n, np.int64)
    scheduled = np.full(n, -1, np.int64)
    events = np.empty(n, np.int64)
    where = np.full(n, -1, np.int64)
    when = np.zeros(n)
    queue = np.empty(count, np.int64)  # pooled: one FIFO; otherwise linked lists per instance
    queue_next = np.full(count, -1, np.int64)
    queue_head = np.full(n, -1, np.int64)
    queue_tail = np.full(n, -1, np.int64)
    idle = np.arange(n, dtype=np.int64)  # sorted: a heap
    counters = np.zeros(5, np.int64)
    counters[_FREE] = n * slots
    counters[_IDLE_SIZE] = n
    pooled = dispatch == _POOLED
    next_arrival = 0
    while next_arrival < count or counters[_EVENTS] > 0:
        # the next thing to happen: an instance's iteration boundary, or an arrival
        boundary_instance = -1
        boundary = 0
        now = 0.0
        if counters[_EVENTS] > 0 and (next_arrival >= count or when[events[0]] <= arrivals[next_arrival]):
            boundary_instance = events[0]
            now = when[boundary_instance]
            _event_remove(events, where, when, counters, boundary_instance)
            boundary = scheduled[boundary_instance]
        else:
            r = next_arrival
            now = arrivals[r]
            next_arrival += 1
            target = -1
            if pooled:
                if counters[_FREE] == 0:
                    queue[counters[_QUEUE_TAIL]] = r
                    counters[_QUEUE_TAIL] += 1
                    continue
                while counters[_IDLE_SIZE] > 0 and committed[idle[0]] != 0:
                    _pop_idle(idle, counters)
                if counters[_IDLE_SIZE] > 0:
                    target = _pop_idle(idle, counters)
                else:
                    target = _soonest_free_instance(n, slots, committed, active, seg_time, iter_s, now)
            else:
                if dispatch == _ROUND_ROBIN:
                    target = r % n
                else:
                    target = 0
                    for j in range(1, n):
                        if load[j] < load[target]:
                            target = j
                load[target] += 1
                if committed[target] >= slots:
                    if queue_tail[target] < 0:
                        queue_head[target] = r
                    else:
                        queue_next[queue_tail[target]] = r
                    queue_tail[target] = r
                    continue
            # reserve a slot of ``target`` for r; admitted at its next boundary
            i = target
            if pooled:
                load[i] += 1
            counters[_FREE] -= 1
            slot_start[r] = now
            committed[i] += 1
            reserved[i, reserved_sizes[i]] = r
            reserved_sizes[i] += 1
            if active[i] == 0:
                seg_time[i] = now
                boundary_instance = i
                boundary = seg_boundary[i]
            else:
                next_boundary = seg_boundary[i] + _steps_to_boundary(seg_time[i], iter_s[i], now)
                if next_boundary == seg_boundary[i]:
                    boundary_instance = i
                    boundary = next_boundary
                elif next_boundary < scheduled[i]:
                    _schedule_event(
                        events, where, when, counters, scheduled, seg_time, seg_boundary, iter_s, i,
                        next_boundary,
                    )  # fmt: skip
            if boundary_instance < 0:
                continue
        # instance ``i`` reaches iteration boundary ``boundary`` at ``now``
        i = boundary_instance
        start_time, start_boundary, step = seg_time[i], seg_boundary[i], iter_s[i]
        while token_sizes[i] > 0 and tokens[i, 0] // count <= boundary:
            key = _row_pop(tokens, token_sizes, i)
            first_token[key % count] = start_time + (key // count - start_boundary) * step
        busy_decoding, busy_prefill, busy_extra = decoding[i], prefill_tokens[i], extra_decode[i]
        freed = 0
        while change_sizes[i] > 0 and changes[i, 0] // kinds <= boundary:
            key = _row_pop(changes, change_sizes, i)
            r = key % count
            kind = (key // count) % 3
            if kind == 2:  # departure
                departure[r] = now
                busy_decoding -= 1
                busy_extra -= extra[r]
                freed += 1
            elif kind == 1:  # end of prefill
                busy_prefill -= last_chunk[r]
                busy_decoding += 1
                busy_extra += extra[r]
            else:  # the last, shorter chunk
                busy_prefill += last_chunk[r] - chunk
        now_active = active[i] - freed
        now_committed = committed[i] - freed
        load[i] -= freed
        counters[_FREE] += freed
        while now_committed < slots:
            if pooled:
                if counters[_QUEUE_HEAD] == counters[_QUEUE_TAIL]:
                    break
                r = queue[counters[_QUEUE_HEAD]]
                counters[_QUEUE_HEAD] += 1
                load[i] += 1
            else:
                r = queue_head[i]
                if r < 0:
                    break
                queue_head[i] = queue_next[r]
                if queue_head[i] < 0:
                    queue_tail[i] = -1
            slot_start[r] = now
            reserved[i, reserved_sizes[i]] = r
            reserved_sizes[i] += 1
            now_committed += 1
            counters[_FREE] -= 1
        for k in range(reserved_sizes[i]):
            r = reserved[i, k]
            admission[r] = now
            p = prefill_iterations[r]
            _row_push(changes, change_sizes, i, ((boundary + iterations[r]) * 3 + 2) * count + r)
            _row_push(tokens, token_sizes, i, (boundary + p + 1) * count + r)
            if p == 0:
                busy_decoding += 1
                busy_extra += extra[r]
                continue
            busy_prefill += chunk if p > 1 else last_chunk[r]
            _row_push(changes, change_sizes, i, ((boundary + p) * 3 + 1) * count + r)
            if p > 1 and last_chunk[r] != chunk:
                _row_push(changes, change_sizes, i, ((boundary + p - 1) * 3) * count + r)
        now_active += reserved_sizes[i]
        reserved_sizes[i] = 0
        decoding[i], prefill_tokens[i], extra_decode[i] = busy_decoding, busy_prefill, busy_extra
        active[i] = now_active
        committed[i] = now_committed
        seg_time[i] = now
        seg_boundary[i] = boundary
        iter_s[i] = w + h * busy_decoding + busy_extra + tau * busy_prefill
        if now_active > 0:
            _schedule_event(
                events, where, when, counters, scheduled, seg_time, seg_boundary, iter_s, i,
                changes[i, 0] // kinds,
            )  # fmt: skip
        else:
            _event_remove(events, where, when, counters, i)
            scheduled[i] = -1
            idle = _push_idle(idle, counters, i)


_KERNEL_HELPERS = (
    _sift_down, _sift_up, _sift_down_pair, _sift_up_pair, _grown, _steps_to_boundary, _soonest_free_instance,
    _row_push, _row_pop, _event_before, _event_sift, _event_remove, _schedule_event, _push_idle, _pop_idle,
)  # fmt: skip
