"""The simulator's engines: who starts when, request by request and iteration by iteration.

:func:`fcfs_start_times` and :func:`dispatch_known_service` serve the request-level models
(service times known on arrival); :func:`run_iteration_engine` is the iteration-level ``physical``
engine, which schedules each instance's iterations as vLLM's V1 scheduler does (or, with other
:class:`IterationSettings`, as the engine before it did). See :mod:`fleetopt.core.simulate` for
the models, the dispatch policies and what is measured.

Speed: the loops that cannot be vectorized (a heap of server free times, least-loaded dispatch,
the iteration-level engine) run compiled by numba when it is installed (``@jit``:
``numba.njit(cache=True)``, compiled once per machine and cached beside this file). Each compiled
kernel is also plain Python over numpy arrays and scalars; without numba (or with
``FLEETOPT_JIT=0``) that same source runs interpreted, so both give bit-identical results
(``tests/test_simulate.py`` and ``tests/test_engine_vllm.py`` check it).
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    one = np.ones(2)
    _compiled(_fcfs_heap_kernel)(np.zeros(1), one, one, np.empty(2))
    _compiled(_least_loaded_kernel)(one, one, 1, 1, np.empty(2))
    ones = np.ones(2, np.int64)
    run_iteration_engine(
        np.zeros(2), ones, ones, np.zeros(2), np.zeros(2), instances=1, slots=1, base_s=0.01,
        per_decode_s=0.001, per_prefill_token_s=0.0, settings=IterationSettings(None, None, None, 16, 0),
        dispatch="pooled",
    )  # fmt: skip
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


# --------------------------------------------------------------------------------------------
# The iteration-level engine (the ``physical`` service model)
# --------------------------------------------------------------------------------------------

#: Dispatch policies of the iteration-level engine, by the code its kernel takes.
DISPATCH_CODES = {
    "pooled": 0,
    "round-robin": 1,
    "least-loaded": 2,
    "least-kv": 3,
    "least-waiting": 4,
    "random": 5,
    "least-tokens": 6,
}
_POOLED, _ROUND_ROBIN, _LEAST_LOADED, _LEAST_KV, _LEAST_WAITING, _RANDOM, _LEAST_TOKENS = range(7)
#: An unbounded token budget or KV cache, in tokens or blocks.
_UNBOUNDED = 1 << 62

# Columns of the per-instance integer state ``ist``.
(
    _NRUN, _NRES, _RES_HEAD, _RES_TAIL, _NQ, _Q_HEAD, _Q_TAIL, _COMMITTED, _LOAD, _SEG_B, _CUR_B, _BUSY,
    _DECODING, _FREE_BLOCKS, _USED_BLOCKS, _BUDGET_LEFT, _PREEMPTED, _CHANGED, _PREFILL_TOKENS, _UNSCHEDULED,
    _SENT, _WHERE, _TOKENS, _BACKLOG, _STRIDE, _EVENT_B,
) = range(26)  # fmt: skip
_NI = 26
# Columns of the per-instance float state ``fst``.
_SEG_T, _ITER_S, _CUR_T, _EXTRA, _EXCESS, _EXTRA_UNSCHEDULED, _WHEN = range(7)
_NF = 7
# Columns of a running request's row in its instance's ``slot`` array.
_S_REQ, _S_COMP, _S_GEN, _S_SCHED, _S_BLOCKS, _S_DEC, _S_PROMPT, _S_OUT = range(8)
_NS = 8
# counters[...]: free slots of the pool, idle-heap size, events, pooled queue head/tail/length
_FREE, _IDLE_SIZE, _EVENTS, _POOL_HEAD, _POOL_TAIL, _POOL_LEN = range(6)


@dataclass(frozen=True)
class IterationSettings:
    """How one instance schedules its iterations: vLLM's scheduler parameters and the engine's
    cost terms (:func:`run_iteration_engine`; presets in :mod:`fleetopt.core.simulate`).

    Attributes:
        token_budget: tokens one iteration computes at most, shared in order by the running
            requests and then the waiting ones (vLLM's ``max_num_batched_tokens``); None = no limit.
        prefill_cap_tokens: tokens one request computes in one iteration at most (vLLM's
            ``long_prefill_token_threshold``); None = no cap.
        kv_blocks: KV blocks of one instance; None = never runs out (each slot holds its request's
            KV, the reservation the planner's slot count stands for).
        kv_block_tokens: tokens per KV block (vLLM's ``block_size``).
        first_token_offset: 0: a request's first token comes with the iteration that computes the
            last of its prompt (vLLM); 1: with the one after it (FleetOpt Eq. 7's wait + P·t + t),
            and the request decodes one iteration more.
        attention_s_per_token_pair: the prompt's attention, seconds per (prompt token, token before
            it in the context) pair of a chunk (0: prompt tokens cost τ each, whatever the context).
        prefill_kv_read_s_per_token: a chunk at context x costs at least this × (x + chunk), the
            bandwidth it needs to read the context's KV and write its own (0: no floor).
    """

    token_budget: int | None
    prefill_cap_tokens: int | None
    kv_blocks: int | None
    kv_block_tokens: int
    first_token_offset: int
    attention_s_per_token_pair: float = 0.0
    prefill_kv_read_s_per_token: float = 0.0


@dataclass(frozen=True, eq=False)
class IterationRun:
    """What :func:`run_iteration_engine` returns: per request, in arrival order, the times it got a
    slot (reserved at an instance), was first scheduled, had its first token and left, seconds,
    and how often it was preempted; ``record``: the iteration sums asked for by ``record_from_s``;
    ``dispatched``: what the router saw of the instance it sent the request to, at that moment
    (columns: the instance, its outstanding requests, the prompt tokens it still had to prefill, and
    the fewest prompt tokens any instance had left to prefill; under ``pooled``, when the request got
    its slot)."""

    slot_start_s: np.ndarray
    admission_s: np.ndarray
    first_token_s: np.ndarray
    departure_s: np.ndarray
    preemptions: np.ndarray
    record: np.ndarray
    dispatched: np.ndarray


def run_iteration_engine(
    arrival_s: np.ndarray,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    decode_extra_s: np.ndarray,
    draws: np.ndarray,
    *,
    instances: int,
    slots: int,
    base_s: float,
    per_decode_s: float,
    per_prefill_token_s: float,
    settings: IterationSettings,
    dispatch: str,
    record_from_s: float = -1.0,
    stride: bool = True,
    cached_tokens: np.ndarray | None = None,
) -> IterationRun:
    """Simulate one pool's instances iteration by iteration (:func:`_iteration_kernel`).

    ``arrival_s`` non-decreasing; per request its prompt (≥ 1 token unless
    ``settings.first_token_offset`` is 1), its output tokens (≥ 1), the cost its decoding adds to an
    iteration beyond ``per_decode_s`` (the KV-read excess) and a uniform draw in [0, 1) that breaks
    dispatch ties (``least-kv``, ``least-waiting``, ``least-tokens``) and picks ``random``'s instance. With
    ``record_from_s`` ≥ 0, ``record`` sums over the busy iterations that start at or after it:
    count, Σt, Σt², ΣA, ΣA·t (t: the iteration's length, A: the arrivals routed to its instance
    during it; not under ``pooled``). ``stride``: skip, in one step, iterations in which nothing can
    change (``False`` steps through every one: the same times to the last bit, slower; under
    ``least-kv`` every one is stepped, since the router reads the KV blocks they add).
    ``cached_tokens``: per request, the prompt tokens its instance's prefix cache already holds
    (``--prefix-caching``; none when None): it starts with them computed, as vLLM sets
    ``num_computed_tokens``, and its KV blocks for them are allocated when it is admitted."""
    count = arrival_s.size
    if cached_tokens is None:
        cached_tokens = np.zeros(count, np.int64)
    outputs = [np.zeros(count) for _ in range(4)]
    preemptions = np.zeros(count, np.int64)
    record = np.zeros(5)
    dispatched = np.zeros((count, 4), np.int64)
    arguments = (
        np.ascontiguousarray(arrival_s, dtype=np.float64),
        np.ascontiguousarray(prompt_tokens, dtype=np.int64),
        np.ascontiguousarray(cached_tokens, dtype=np.int64),
        np.ascontiguousarray(output_tokens, dtype=np.int64),
        np.ascontiguousarray(decode_extra_s, dtype=np.float64),
        np.ascontiguousarray(draws, dtype=np.float64),
        float(base_s), float(per_decode_s), float(per_prefill_token_s),
        float(settings.attention_s_per_token_pair), float(settings.prefill_kv_read_s_per_token),
        float(record_from_s), int(slots), int(instances), DISPATCH_CODES[dispatch],
        int(settings.token_budget or 0), int(settings.prefill_cap_tokens or 0), int(settings.kv_blocks or 0),
        int(settings.kv_block_tokens), int(settings.first_token_offset),
        (1 if dispatch == "least-kv" or not stride else _UNBOUNDED),
        *outputs, preemptions, record, dispatched,
    )  # fmt: skip
    if count:
        kernel = _compiled(_iteration_kernel) if jit_available() else _iteration_kernel
        kernel(*arguments)
    return IterationRun(*outputs, preemptions, record, dispatched)


def _soonest_free_instance(n: int, slots: int, ist: np.ndarray, fst: np.ndarray, now: float) -> int:
    """The instance with a free slot whose next iteration starts first, lowest index on ties
    (``pooled`` dispatch)."""
    target, best = -1, math.inf
    for j in range(n):
        if ist[j, _COMMITTED] >= slots:
            continue
        if ist[j, _BUSY] > 0:
            seg_time, iter_s = fst[j, _SEG_T], fst[j, _ITER_S]
            ahead = math.ceil((now - seg_time) / iter_s)
            start_at = seg_time + (ahead if ahead > 0 else 0.0) * iter_s
        else:
            start_at = now
        if start_at < best:
            target, best = j, start_at
    return target


def _least_by(values: np.ndarray, n: int, draw: float) -> int:
    """The index of the smallest of ``values[:n]``, ties broken by ``draw`` ∈ [0, 1) (uniformly)."""
    low = values[0]
    ties = 1
    for j in range(1, n):
        if values[j] < low:
            low, ties = values[j], 1
        elif values[j] == low:
            ties += 1
    pick = int(draw * ties)
    for j in range(n):
        if values[j] == low:
            if pick == 0:
                return j
            pick -= 1
    return n - 1


def _steps_to_boundary(segment_time: float, iteration_s: float, now: float) -> int:
    """Iterations from a busy instance's segment start to its first boundary at or after ``now``."""
    steps = math.ceil((now - segment_time) / iteration_s)
    if steps < 0:
        steps = 0
    if segment_time + steps * iteration_s < now:
        steps += 1
    return steps


def _least_backlog(ist: np.ndarray, n: int) -> int:
    """The fewest prompt tokens any instance still has to prefill."""
    least = ist[0, _BACKLOG]
    for j in range(1, n):
        if ist[j, _BACKLOG] < least:
            least = ist[j, _BACKLOG]
    return least


def _list_append(head: np.ndarray, tail: np.ndarray, link: np.ndarray, lst: int, r: int) -> None:
    """Append request ``r`` to linked FIFO ``lst`` (``head``/``tail`` per list, ``link`` per request)."""
    link[r] = -1
    if tail[lst] < 0:
        head[lst] = r
    else:
        link[tail[lst]] = r
    tail[lst] = r


def _list_pop(head: np.ndarray, tail: np.ndarray, link: np.ndarray, lst: int) -> int:
    """Remove and return the head of linked FIFO ``lst``."""
    r = head[lst]
    head[lst] = link[r]
    if head[lst] < 0:
        tail[lst] = -1
    return r


def _event_before(when: np.ndarray, a: int, b: int) -> bool:
    """Events are ordered by time, then instance."""
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


def _event_set(
    events: np.ndarray, where: np.ndarray, when: np.ndarray, counters: np.ndarray, i: int, time: float
) -> None:
    """Instance ``i``'s next event is at ``time`` (replacing the pending one)."""
    when[i] = time
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


def _chunk_excess_s(
    context: int, tokens: int, tau: float, tau_attention: float, kv_read_prefill: float
) -> float:
    """What a prompt chunk of ``tokens`` at ``context`` tokens already in the KV cache costs beyond
    τ·tokens: its attention over the (context, chunk) pairs, tokens·context + tokens·(tokens + 1)/2
    (causal), or, where more, the time to read the context's KV and write its own."""
    pairs = tokens * context + tokens * (tokens + 1) // 2
    attention = tau_attention * pairs
    reading = kv_read_prefill * (context + tokens) - tau * tokens
    return attention if attention >= reading else reading


def _complete_iteration(
    i: int, now: float, steps: int, offset: int, ist: np.ndarray, fst: np.ndarray, slot: np.ndarray,
    slot_extra: np.ndarray, counters: np.ndarray, first_token: np.ndarray, departure: np.ndarray,
    record: np.ndarray, record_from_s: float,
) -> int:  # fmt: skip
    """Instance ``i``'s iteration ends at ``now`` — or the ``steps`` identical iterations that began at
    its current boundary (a stride: only decoding, nothing to admit, KV enough): every scheduled
    request has computed its tokens; a request that has computed all it knows samples a token (its
    first, or its last: it leaves). Returns the slots freed. A request that starts decoding adds its
    cost before any that leaves takes its own off (the order of the floating-point sums is part of
    the engine)."""
    if record_from_s >= 0.0:
        started = fst[i, _CUR_T]
        if started >= record_from_s:
            length = (now - started) / steps
            sent = ist[i, _SENT]
            record[0] += steps
            record[1] += steps * length
            record[2] += steps * length * length
            record[3] += sent
            record[4] += sent * length
        ist[i, _SENT] = 0
    ist[i, _BACKLOG] -= ist[i, _PREFILL_TOKENS]
    nrun = ist[i, _NRUN]
    leaving = 0
    for j in range(nrun):
        tokens = slot[i, j, _S_SCHED]
        if tokens == 0:
            continue
        if steps > 1:  # a decoding request through a stride: one token per iteration
            before = slot[i, j, _S_GEN]
            slot[i, j, _S_COMP] += steps
            slot[i, j, _S_GEN] = before + steps
            if before < 1 + offset <= before + steps:  # the same arithmetic as a boundary's time
                boundary = ist[i, _CUR_B] + 1 + offset - before
                first_token[slot[i, j, _S_REQ]] = (
                    fst[i, _SEG_T] + (boundary - ist[i, _SEG_B]) * fst[i, _ITER_S]
                )
            if before + steps >= slot[i, j, _S_OUT] + offset:
                leaving += 1
            continue
        computed = slot[i, j, _S_COMP] + tokens
        slot[i, j, _S_COMP] = computed
        if computed == slot[i, j, _S_PROMPT] + slot[i, j, _S_GEN]:
            generated = slot[i, j, _S_GEN] + 1
            slot[i, j, _S_GEN] = generated
            if generated == 1 + offset:
                first_token[slot[i, j, _S_REQ]] = now
            if generated >= slot[i, j, _S_OUT] + offset:
                leaving += 1
            elif slot[i, j, _S_DEC] == 0:
                slot[i, j, _S_DEC] = 1
                ist[i, _DECODING] += 1
                fst[i, _EXTRA] += slot_extra[i, j]
                ist[i, _CHANGED] = 1
    if leaving == 0:
        return 0
    kept = 0
    for j in range(nrun):
        if slot[i, j, _S_GEN] >= slot[i, j, _S_OUT] + offset:
            departure[slot[i, j, _S_REQ]] = now
            if slot[i, j, _S_DEC] == 1:
                ist[i, _DECODING] -= 1
                fst[i, _EXTRA] -= slot_extra[i, j]
            ist[i, _FREE_BLOCKS] += slot[i, j, _S_BLOCKS]
            ist[i, _USED_BLOCKS] -= slot[i, j, _S_BLOCKS]
            ist[i, _TOKENS] -= slot[i, j, _S_PROMPT]
        else:
            if kept != j:
                for field in range(_NS):
                    slot[i, kept, field] = slot[i, j, field]
                slot_extra[i, kept] = slot_extra[i, j]
            kept += 1
    ist[i, _NRUN] = kept
    ist[i, _COMMITTED] -= leaving
    ist[i, _LOAD] -= leaving
    counters[_FREE] += leaving
    ist[i, _CHANGED] = 1
    return leaving


def _plan_iteration(
    i: int, now: float, boundary: int, admit_only: bool,
    prompts: np.ndarray, cached: np.ndarray, outputs: np.ndarray, extra: np.ndarray, generated: np.ndarray,
    admission: np.ndarray, preemptions: np.ndarray,
    w: float, h: float, tau: float, tau_attention: float, kv_read_prefill: float,
    slots: int, budget_tokens: int, cap: int, kv_bounded: bool, block: int, offset: int, max_stride: int,
    ist: np.ndarray, fst: np.ndarray, slot: np.ndarray, slot_extra: np.ndarray, link: np.ndarray,
) -> bool:  # fmt: skip
    """vLLM's ``Scheduler.schedule`` for instance ``i`` at iteration boundary ``boundary`` (time
    ``now``): the running requests in order, each its remaining tokens up to the cap and the budget
    left, allocating KV blocks as it goes and, when they run out, preempting the newest running
    request (recompute: its KV freed, back to the head of the waiting queue); then, unless this step
    preempted, the waiting requests with a slot, first come first served, while the budget lasts and
    their first chunk's blocks fit. With ``admit_only`` (an arrival at the very instant the
    iteration starts) only the waiting part runs again, on what the first pass left. Sets the
    iteration's cost; returns whether anything was scheduled. The running requests' state lives in
    their instance's ``slot`` rows, in running order (``generated`` keeps it while they wait)."""
    costs_vary = tau_attention > 0.0 or kv_read_prefill > 0.0
    if admit_only:
        budget = ist[i, _BUDGET_LEFT]
        preempted = ist[i, _PREEMPTED] == 1
        prefill_tokens = ist[i, _PREFILL_TOKENS]
        unscheduled = ist[i, _UNSCHEDULED]
        excess = fst[i, _EXCESS]
        extra_unscheduled = fst[i, _EXTRA_UNSCHEDULED]
        scheduled_any = True
    else:
        budget = budget_tokens
        preempted = False
        prefill_tokens = 0
        unscheduled = 0
        excess = 0.0
        extra_unscheduled = 0.0
        scheduled_any = False
        nrun = ist[i, _NRUN]
        j = 0
        while j < nrun:
            tokens = 0
            if budget > 0:
                tokens = slot[i, j, _S_PROMPT] + slot[i, j, _S_GEN] - slot[i, j, _S_COMP]
                if 0 < cap < tokens:
                    tokens = cap
                if tokens > budget:
                    tokens = budget
                needed = (slot[i, j, _S_COMP] + tokens + block - 1) // block - slot[i, j, _S_BLOCKS]
                while kv_bounded and needed > ist[i, _FREE_BLOCKS]:
                    nrun -= 1  # preempt the newest running request
                    r = slot[i, nrun, _S_REQ]
                    ist[i, _FREE_BLOCKS] += slot[i, nrun, _S_BLOCKS]
                    ist[i, _USED_BLOCKS] -= slot[i, nrun, _S_BLOCKS]
                    generated[r] = slot[i, nrun, _S_GEN]
                    if slot[i, nrun, _S_DEC] == 1:  # all of it to compute again (but the cached prefix)
                        ist[i, _BACKLOG] += slot[i, nrun, _S_PROMPT] + slot[i, nrun, _S_GEN] - cached[r]
                    else:
                        ist[i, _BACKLOG] += slot[i, nrun, _S_COMP] - cached[r]
                    if slot[i, nrun, _S_DEC] == 1:
                        ist[i, _DECODING] -= 1
                        fst[i, _EXTRA] -= slot_extra[i, nrun]
                    link[r] = ist[i, _RES_HEAD]  # back to the head of the waiting queue
                    ist[i, _RES_HEAD] = r
                    if ist[i, _RES_TAIL] < 0:
                        ist[i, _RES_TAIL] = r
                    ist[i, _NRES] += 1
                    preemptions[r] += 1
                    preempted = True
                    ist[i, _CHANGED] = 1
                    if nrun == j:
                        break
                if j >= nrun:  # it preempted itself: nothing more runs this step
                    break
                slot[i, j, _S_BLOCKS] += needed
                ist[i, _FREE_BLOCKS] -= needed
                ist[i, _USED_BLOCKS] += needed
                budget -= tokens
            if tokens != slot[i, j, _S_SCHED]:
                ist[i, _CHANGED] = 1
            slot[i, j, _S_SCHED] = tokens
            if tokens > 0:
                scheduled_any = True
                if slot[i, j, _S_DEC] == 0:
                    prefill_tokens += tokens
                    if costs_vary:
                        excess += _chunk_excess_s(
                            slot[i, j, _S_COMP], tokens, tau, tau_attention, kv_read_prefill
                        )
            elif slot[i, j, _S_DEC] == 1:  # the budget ran out before it
                unscheduled += 1
                extra_unscheduled += slot_extra[i, j]
            j += 1
        ist[i, _NRUN] = nrun
    admission_waits = False  # a waiting request that KV or the slots keep out: until someone leaves
    if not preempted:
        while ist[i, _NRES] > 0 and budget > 0 and ist[i, _NRUN] < slots:
            r = ist[i, _RES_HEAD]
            first = admission[r] < 0.0
            if first and prompts[r] == 0:
                generated[r] = offset  # an empty prompt: its first sample comes free
            done = cached[r]  # the cached prefix (0 without prefix caching)
            tokens = prompts[r] + generated[r] - done  # nothing else computed yet (or all of it lost)
            if 0 < cap < tokens:
                tokens = cap
            if tokens > budget:
                tokens = budget
            needed = (done + tokens + block - 1) // block
            if kv_bounded and needed > ist[i, _FREE_BLOCKS]:
                admission_waits = True
                break
            ist[i, _RES_HEAD] = link[r]
            if ist[i, _RES_HEAD] < 0:
                ist[i, _RES_TAIL] = -1
            ist[i, _NRES] -= 1
            j = ist[i, _NRUN]
            ist[i, _NRUN] += 1
            slot[i, j, _S_REQ] = r
            slot[i, j, _S_COMP] = done
            slot[i, j, _S_GEN] = generated[r]
            slot[i, j, _S_SCHED] = tokens
            slot[i, j, _S_BLOCKS] = needed
            slot[i, j, _S_PROMPT] = prompts[r]
            slot[i, j, _S_OUT] = outputs[r]
            slot_extra[i, j] = extra[r]
            ist[i, _FREE_BLOCKS] -= needed
            ist[i, _USED_BLOCKS] += needed
            budget -= tokens
            ist[i, _CHANGED] = 1
            scheduled_any = True
            if first:
                admission[r] = now
            if first and prompts[r] == 0:
                slot[i, j, _S_DEC] = 1  # nothing to prefill: it decodes from its first iteration
                ist[i, _DECODING] += 1
                fst[i, _EXTRA] += extra[r]
            else:
                slot[i, j, _S_DEC] = 0
                prefill_tokens += tokens
                if costs_vary:
                    excess += _chunk_excess_s(done, tokens, tau, tau_attention, kv_read_prefill)
    ist[i, _BUDGET_LEFT] = budget
    ist[i, _PREEMPTED] = 1 if preempted else 0
    ist[i, _PREFILL_TOKENS] = prefill_tokens
    ist[i, _UNSCHEDULED] = unscheduled
    fst[i, _EXCESS] = excess
    fst[i, _EXTRA_UNSCHEDULED] = extra_unscheduled
    if not scheduled_any:
        return False
    iteration_s = (
        w + h * (ist[i, _DECODING] - unscheduled) + (fst[i, _EXTRA] - extra_unscheduled)
        + tau * prefill_tokens + excess
    )  # fmt: skip
    if ist[i, _CHANGED] == 1 or (costs_vary and prefill_tokens > 0):
        fst[i, _SEG_T] = now
        ist[i, _SEG_B] = boundary
        fst[i, _ITER_S] = iteration_s
    ist[i, _CHANGED] = 0
    ist[i, _CUR_B] = boundary
    fst[i, _CUR_T] = now
    # A stride: while only decoding requests run and nothing can join them, the next iterations are
    # this one again, until the first of them leaves or the KV blocks they add could run short.
    stride = 1
    if (
        max_stride > 1 and prefill_tokens == 0 and unscheduled == 0 and not preempted
        and (ist[i, _NRES] == 0 or ist[i, _NRUN] == slots or admission_waits)
    ):  # fmt: skip
        stride = max_stride
        for j in range(ist[i, _NRUN]):
            left = slot[i, j, _S_OUT] + offset - slot[i, j, _S_GEN]
            if left < stride:
                stride = left
        if kv_bounded:  # k more tokens cross at most ⌈k/block⌉ block boundaries per request
            safe = 1 + block * (ist[i, _FREE_BLOCKS] // ist[i, _NRUN])
            if safe < stride:
                stride = safe
    ist[i, _STRIDE] = stride
    return True


def _iteration_kernel(
    arrivals: np.ndarray,
    prompts: np.ndarray,
    cached: np.ndarray,
    outputs: np.ndarray,
    extra: np.ndarray,
    draws: np.ndarray,
    w: float,
    h: float,
    tau: float,
    tau_attention: float,
    kv_read_prefill: float,
    record_from_s: float,
    slots: int,
    n: int,
    dispatch: int,
    budget_tokens: int,
    cap: int,
    kv_blocks: int,
    block: int,
    offset: int,
    max_stride: int,
    slot_start: np.ndarray,
    admission: np.ndarray,
    first_token: np.ndarray,
    departure: np.ndarray,
    preemptions: np.ndarray,
    record: np.ndarray,
    dispatched: np.ndarray,
) -> None:
    """The iteration-level engine: n instances of at most ``slots`` running requests each, their
    iterations scheduled as vLLM's V1 scheduler does (:func:`_plan_iteration`), requests dispatched by
    ``dispatch`` (the codes of :data:`DISPATCH_CODES`).

    An instance's iteration k runs from boundary k to k + 1 and costs
    W + H·d + Σ_decoding extra + τ·p + Σ_chunks excess (d decoding requests scheduled, p prompt
    tokens, each chunk's excess :func:`_chunk_excess_s`). While nothing changes in what an instance
    schedules, its boundaries fall at T + (k − K)·t (a segment: time T at boundary K), so boundary
    times do not drift with the number of iterations. Events (boundaries, arrivals) are taken in
    time order, a boundary before an arrival at the same time and instances by index; an arrival at
    the very instant an iteration starts on its instance joins that iteration.

    A request gets a slot of its instance when it arrives there with fewer than ``slots`` requests
    holding one (``slot_start``), else waits in that instance's FIFO (under ``pooled``, one FIFO for
    the pool, and the slot is the free one whose next iteration starts first); it is first
    scheduled (``admission``) at a boundary, has its first token at the end of the iteration that
    samples its (1 + ``offset``)-th token and leaves at the end of the one that samples its
    (outputs + ``offset``)-th.
    """
    count = arrivals.shape[0]
    pooled = dispatch == _POOLED
    kv_bounded = kv_blocks > 0
    budget = budget_tokens if budget_tokens > 0 else _UNBOUNDED
    ist = np.zeros((n, _NI), np.int64)
    fst = np.zeros((n, _NF))
    slot = np.zeros((n, slots, _NS), np.int64)  # the running requests, in running order
    slot_extra = np.zeros((n, slots))
    generated = np.zeros(count, np.int64)  # tokens sampled, for a request not running
    q_head = np.full(n, -1, np.int64)  # FIFOs of the requests without a slot, per instance
    q_tail = np.full(n, -1, np.int64)
    pool_queue = np.empty(count, np.int64)  # pooled: one FIFO for the pool
    link = np.full(count, -1, np.int64)
    events = np.empty(n, np.int64)
    where = np.full(n, -1, np.int64)
    when = np.zeros(n)
    idle = np.arange(n, dtype=np.int64)  # sorted: a heap
    counters = np.zeros(6, np.int64)
    counters[_FREE] = n * slots
    counters[_IDLE_SIZE] = n
    for i in range(n):
        ist[i, _RES_HEAD] = -1
        ist[i, _RES_TAIL] = -1
        ist[i, _WHERE] = -1
        ist[i, _FREE_BLOCKS] = kv_blocks if kv_bounded else _UNBOUNDED
        fst[i, _ITER_S] = w
        fst[i, _CUR_T] = -1.0
    for r in range(count):
        admission[r] = -1.0
    used = np.zeros(n, np.int64)
    next_arrival = 0
    while next_arrival < count or counters[_EVENTS] > 0:
        if counters[_EVENTS] > 0 and (next_arrival >= count or when[events[0]] <= arrivals[next_arrival]):
            # instance ``i`` reaches the end of its iteration
            i = events[0]
            now = when[i]
            _event_remove(events, where, when, counters, i)
            boundary = ist[i, _EVENT_B]
            freed = _complete_iteration(
                i, now, boundary - ist[i, _CUR_B], offset, ist, fst, slot, slot_extra, counters, first_token,
                departure, record,
                record_from_s,
            )  # fmt: skip
            if freed > 0:
                while ist[i, _COMMITTED] < slots:  # the freed slots go to the requests queued for one
                    if pooled:
                        if counters[_POOL_LEN] == 0:
                            break
                        r = pool_queue[counters[_POOL_HEAD]]
                        counters[_POOL_HEAD] += 1
                        counters[_POOL_LEN] -= 1
                        ist[i, _LOAD] += 1
                    else:
                        if ist[i, _NQ] == 0:
                            break
                        r = _list_pop(q_head, q_tail, link, i)
                        ist[i, _NQ] -= 1
                    slot_start[r] = now
                    if pooled:
                        dispatched[r, 0], dispatched[r, 1] = i, ist[i, _LOAD] - 1
                        dispatched[r, 2] = ist[i, _BACKLOG]
                        dispatched[r, 3] = _least_backlog(ist, n)
                        ist[i, _TOKENS] += prompts[r]
                        ist[i, _BACKLOG] += prompts[r] - cached[r]
                    _list_append(ist[:, _RES_HEAD], ist[:, _RES_TAIL], link, i, r)
                    ist[i, _NRES] += 1
                    ist[i, _COMMITTED] += 1
                    counters[_FREE] -= 1
        else:
            r = next_arrival
            now = arrivals[r]
            next_arrival += 1
            if pooled:
                if counters[_FREE] == 0:
                    pool_queue[counters[_POOL_TAIL]] = r
                    counters[_POOL_TAIL] += 1
                    counters[_POOL_LEN] += 1
                    continue
                while counters[_IDLE_SIZE] > 0 and ist[idle[0], _COMMITTED] != 0:
                    _pop_idle(idle, counters)
                if counters[_IDLE_SIZE] > 0:
                    i = _pop_idle(idle, counters)
                else:
                    i = _soonest_free_instance(n, slots, ist, fst, now)
                dispatched[r, 0], dispatched[r, 1], dispatched[r, 2] = i, ist[i, _LOAD], ist[i, _BACKLOG]
                dispatched[r, 3] = _least_backlog(ist, n)
                ist[i, _LOAD] += 1
                ist[i, _TOKENS] += prompts[r]
                ist[i, _BACKLOG] += prompts[r] - cached[r]
            else:
                if dispatch == _ROUND_ROBIN:
                    i = r % n
                elif dispatch == _LEAST_LOADED:
                    i = 0
                    for j in range(1, n):
                        if ist[j, _LOAD] < ist[i, _LOAD]:
                            i = j
                elif dispatch == _LEAST_KV:
                    for j in range(n):
                        used[j] = ist[j, _USED_BLOCKS]
                    i = _least_by(used, n, draws[r])
                elif dispatch == _LEAST_WAITING:
                    for j in range(n):
                        used[j] = ist[j, _NRES] + ist[j, _NQ]
                    i = _least_by(used, n, draws[r])
                elif dispatch == _LEAST_TOKENS:
                    for j in range(n):
                        used[j] = ist[j, _TOKENS]
                    i = _least_by(used, n, draws[r])
                else:
                    i = min(int(draws[r] * n), n - 1)
                dispatched[r, 0], dispatched[r, 1], dispatched[r, 2] = i, ist[i, _LOAD], ist[i, _BACKLOG]
                dispatched[r, 3] = _least_backlog(ist, n)
                ist[i, _LOAD] += 1
                ist[i, _SENT] += 1
                ist[i, _TOKENS] += prompts[r]
                ist[i, _BACKLOG] += prompts[r] - cached[r]
                if ist[i, _COMMITTED] >= slots:
                    _list_append(q_head, q_tail, link, i, r)
                    ist[i, _NQ] += 1
                    continue
            counters[_FREE] -= 1
            slot_start[r] = now
            ist[i, _COMMITTED] += 1
            _list_append(ist[:, _RES_HEAD], ist[:, _RES_TAIL], link, i, r)
            ist[i, _NRES] += 1
            if ist[i, _BUSY] == 1 and fst[i, _CUR_T] != now:
                if ist[i, _EVENT_B] > ist[i, _CUR_B] + 1:  # in a stride: cut it at the next boundary
                    step = _steps_to_boundary(fst[i, _SEG_T], fst[i, _ITER_S], now)
                    wake = ist[i, _SEG_B] + step
                    if wake < ist[i, _EVENT_B]:
                        ist[i, _EVENT_B] = wake
                        _event_set(events, where, when, counters, i, fst[i, _SEG_T] + step * fst[i, _ITER_S])
                continue  # scheduled at the instance's next boundary
            boundary = ist[i, _CUR_B]
            if ist[i, _BUSY] == 1:  # joins the iteration starting now
                _plan_iteration(
                    i, now, boundary, True, prompts, cached, outputs, extra, generated, admission,
                    preemptions,
                    w, h, tau, tau_attention, kv_read_prefill, slots, budget, cap, kv_bounded, block, offset,
                    max_stride, ist, fst, slot, slot_extra, link,
                )  # fmt: skip
                ist[i, _EVENT_B] = boundary + ist[i, _STRIDE]
                _event_set(
                    events, where, when, counters, i,
                    fst[i, _SEG_T] + (ist[i, _EVENT_B] - ist[i, _SEG_B]) * fst[i, _ITER_S],
                )  # fmt: skip
                continue
            fst[i, _SEG_T] = now  # an idle instance starts at once
        # instance ``i`` plans the iteration starting at ``boundary`` (``now``)
        while not _plan_iteration(
            i, now, boundary, False, prompts, cached, outputs, extra, generated, admission, preemptions, w,
            h, tau, tau_attention, kv_read_prefill, slots, budget, cap, kv_bounded, block, offset, max_stride,
            ist, fst, slot, slot_extra, link,
        ):  # fmt: skip
            if ist[i, _PREEMPTED] == 0:
                break  # nothing to run (a preempting step schedules nothing; the next one goes on)
        if ist[i, _NRUN] > 0:
            ist[i, _BUSY] = 1
            ist[i, _EVENT_B] = boundary + ist[i, _STRIDE]
            _event_set(
                events, where, when, counters, i,
                fst[i, _SEG_T] + (ist[i, _EVENT_B] - ist[i, _SEG_B]) * fst[i, _ITER_S],
            )  # fmt: skip
        else:
            ist[i, _BUSY] = 0
            ist[i, _CHANGED] = 0
            fst[i, _CUR_T] = -1.0
            _event_remove(events, where, when, counters, i)
            idle = _push_idle(idle, counters, i)


_KERNEL_HELPERS = (
    _sift_down, _sift_up, _sift_down_pair, _sift_up_pair, _grown, _soonest_free_instance, _least_by,
    _least_backlog, _steps_to_boundary,
    _list_append, _list_pop, _event_before, _event_sift, _event_remove, _event_set, _push_idle, _pop_idle,
    _chunk_excess_s, _complete_iteration, _plan_iteration,
)  # fmt: skip
