"""The iteration-level engine's ``vllm`` scheduler against hand schedules, and its ``slots`` parameters
against the engine they replaced.

Truth used here: schedules worked out by hand from vLLM's V1 scheduler (one token budget per
iteration shared by the running requests in order, then the waiting ones; KV blocks allocated as
tokens are computed; the newest running request preempted and recomputed when blocks run out; the
first token with the last prompt chunk), the request-level FCFS engine for one slot per instance,
and the engine before issue 30 (its traces' digests, recorded at d4cd161).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from fleetopt.core import engines
from fleetopt.core.engines import IterationSettings, dispatch_known_service, run_iteration_engine
from fleetopt.core.routing import Routing
from fleetopt.core.simulate import DISPATCH_POLICIES, SimulatedPool, simulate_fleet
from fleetopt.core.workload import workload_from_requests

W, H, TAU = 0.01, 0.002, 2e-5


def _vllm(budget: int | None = 1000, kv_blocks: int | None = None, block: int = 16, **costs: float):
    return IterationSettings(
        token_budget=budget, prefill_cap_tokens=None, kv_blocks=kv_blocks, kv_block_tokens=block,
        first_token_offset=0, **costs,
    )  # fmt: skip


def _run(
    arrivals, prompts, outputs, settings, *, instances=1, slots=4, dispatch="round-robin", draws=None, h=H
):
    count = len(arrivals)
    return run_iteration_engine(
        np.asarray(arrivals, dtype=float), np.asarray(prompts), np.asarray(outputs), np.zeros(count),
        np.zeros(count) if draws is None else np.asarray(draws, dtype=float),
        instances=instances, slots=slots, base_s=W, per_decode_s=h, per_prefill_token_s=TAU,
        settings=settings, dispatch=dispatch,
    )  # fmt: skip


@pytest.mark.parametrize("dispatch", ["pooled", "round-robin", "least-loaded"])
def test_one_slot_per_instance_is_the_fcfs_schedule_of_its_service_times(dispatch: str) -> None:
    """With one running request per instance nothing shares an iteration: a request prefills in
    ⌈L_in/B⌉ iterations of W + τ·(its chunk), has its first token at the end of the last, and decodes
    L_out − 1 more iterations of W + H. So S = ⌈L_in/B⌉·W + τ·L_in + (L_out − 1)·(W + H), and the
    instances serve FCFS with those known service times (the request-level engine's schedule)."""
    rng = np.random.default_rng(3)
    count, instances, budget = 3000, 4, 512
    arrivals = np.cumsum(rng.exponential(0.09, count))
    prompts = rng.integers(1, 3000, count)
    outputs = rng.integers(1, 40, count)
    run = _run(arrivals, prompts, outputs, _vllm(budget), instances=instances, slots=1, dispatch=dispatch)
    prefill_s = -(-prompts // budget) * W + TAU * prompts
    service = prefill_s + (outputs - 1) * (W + H)
    start = dispatch_known_service(arrivals, service, instances, 1, dispatch)
    assert (start > arrivals).mean() > 0.1  # there is queueing to reproduce
    np.testing.assert_allclose(run.slot_start_s, start, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(run.admission_s, start, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(run.first_token_s, start + prefill_s, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(run.departure_s, start + service, rtol=1e-12, atol=1e-9)


def test_the_token_budget_is_shared_running_requests_first() -> None:
    """Budget B = 1,000. A (1,500 prompt tokens, 3 outputs) arrives at an idle instance at 0 and
    takes 1,000; B (800, 2) arrives at the same instant and finds no budget left. Iteration 2: A's
    last 500, then B's first 500. Iteration 3: A decodes, B its last 300 (first tokens: A at the end
    of 2, B of 3). Iteration 4: both decode, and both leave."""
    run = _run([0.0, 0.0], [1500, 800], [3, 2], _vllm(1000))
    t1 = W + 1000 * TAU
    t2 = t1 + W + 1000 * TAU
    t3 = t2 + W + H + 300 * TAU
    t4 = t3 + W + 2 * H
    np.testing.assert_allclose(run.admission_s, [0.0, t1], rtol=1e-12)
    np.testing.assert_allclose(run.first_token_s, [t2, t3], rtol=1e-12)
    np.testing.assert_allclose(run.departure_s, [t4, t4], rtol=1e-12)
    np.testing.assert_array_equal(run.slot_start_s, [0.0, 0.0])


def test_one_output_token_leaves_with_the_prompt_and_a_prompt_is_chunked_by_the_budget() -> None:
    run = _run([0.0], [2500], [1], _vllm(1000))
    expected = 3 * W + 2500 * TAU  # 1,000 + 1,000 + 500 tokens
    np.testing.assert_allclose(run.first_token_s, [expected], rtol=1e-12)
    np.testing.assert_allclose(run.departure_s, [expected], rtol=1e-12)


def test_running_out_of_kv_blocks_preempts_the_newest_request_which_recomputes() -> None:
    """10 blocks of 16 tokens; H = τ = 0 so every iteration lasts W. A (96 prompt tokens = 6 blocks,
    40 outputs) arrives at 0 and prefills in iteration 1 (first token at W). B (48 = 3 blocks, 40)
    arrives at W/2 and prefills in iteration 2 while A's first decode takes a 7th block: first token
    at 2W, no block left. Iteration 3: B's first decode needs a 4th block, so the newest running
    request, B itself, is preempted (its 3 blocks freed, back to the head of the waiting queue). A
    decodes on (blocks 8 and 9 at its 113th and 129th token) and leaves at the end of iteration 40;
    B, readmitted, recomputes its 48 + 1 tokens in iteration 41 and samples its second token, then
    decodes its other 38: it leaves at 79W. Its first token stays at 2W (it was sent)."""
    settings = _vllm(1000, kv_blocks=10, block=16)
    count = 2
    run = run_iteration_engine(
        np.array([0.0, W / 2]), np.array([96, 48]), np.array([40, 40]), np.zeros(count), np.zeros(count),
        instances=1, slots=4, base_s=W, per_decode_s=0.0, per_prefill_token_s=0.0, settings=settings,
        dispatch="round-robin",
    )  # fmt: skip
    np.testing.assert_array_equal(run.preemptions, [0, 1])
    np.testing.assert_allclose(run.admission_s, [0.0, W], rtol=1e-12)
    np.testing.assert_allclose(run.first_token_s, [W, 2 * W], rtol=1e-12)
    np.testing.assert_allclose(run.departure_s, [40 * W, 79 * W], rtol=1e-12)
    unbounded = run_iteration_engine(
        np.array([0.0, W / 2]), np.array([96, 48]), np.array([40, 40]), np.zeros(count), np.zeros(count),
        instances=1, slots=4, base_s=W, per_decode_s=0.0, per_prefill_token_s=0.0,
        settings=_vllm(1000, kv_blocks=None), dispatch="round-robin",
    )  # fmt: skip
    np.testing.assert_array_equal(unbounded.preemptions, [0, 0])
    np.testing.assert_allclose(unbounded.departure_s, [40 * W, 41 * W], rtol=1e-12)


def test_a_prompt_chunk_pays_its_attention_over_the_context_and_at_least_its_kv_reads() -> None:
    """3,000 prompt tokens in chunks of 1,000 at contexts 0, 1,000, 2,000: each costs
    τ·1,000 + τ_a·(1,000·x + 1,000·1,001/2); with a KV-read floor κ·(x + 1,000) above that, the floor."""
    tau_a = 1e-9
    run = _run([0.0], [3000], [1], _vllm(1000, attention_s_per_token_pair=tau_a))
    pairs = [1000 * x + 1000 * 1001 // 2 for x in (0, 1000, 2000)]
    expected = sum(W + 1000 * TAU + tau_a * p for p in pairs)
    np.testing.assert_allclose(run.first_token_s, [expected], rtol=1e-12)
    kappa = 1e-4  # κ·(x + 1,000) = 0.1, 0.2, 0.3 s, above τ·1,000 + attention
    run = _run(
        [0.0], [3000], [1], _vllm(1000, attention_s_per_token_pair=tau_a, prefill_kv_read_s_per_token=kappa)
    )
    expected = sum(W + kappa * (x + 1000) for x in (0, 1000, 2000))
    np.testing.assert_allclose(run.first_token_s, [expected], rtol=1e-12)


def test_state_aware_policies_send_a_prompt_away_from_the_instance_that_holds_kv() -> None:
    """A (4,000 tokens) arrives at 0 on two idle instances; the tie goes by its draw (0 → instance 0).
    B arrives 1 ms later, during A's first iteration: least-kv and least-loaded send it to the empty
    instance 1 (admitted at once); least-waiting sees no waiting request on either (A runs) and
    breaks the tie by B's draw."""
    arrivals, prompts, outputs = [0.0, 0.001], [4000, 100], [5, 5]
    for dispatch, draws, admitted_at in (
        ("least-kv", [0.0, 0.0], 0.001),
        ("least-loaded", [0.0, 0.0], 0.001),
        ("least-waiting", [0.0, 0.99], 0.001),  # draw 0.99 of two tied: instance 1
        ("round-robin", [0.0, 0.0], 0.001),
    ):
        run = _run(arrivals, prompts, outputs, _vllm(8192), instances=2, dispatch=dispatch, draws=draws)
        assert run.admission_s[1] == pytest.approx(admitted_at), dispatch
    run = _run(
        arrivals, prompts, outputs, _vllm(8192), instances=2, dispatch="least-waiting", draws=[0.0, 0.0]
    )
    assert run.admission_s[1] == pytest.approx(W + 4000 * TAU)  # instance 0: behind A's iteration


def test_the_router_sees_outstanding_requests_and_prompt_tokens_left_to_prefill() -> None:
    """Two instances, budget 1,000. A (3,000 tokens) at 0 → instance 0 (a tie, draw 0). B (200) at 5 ms,
    during A's first chunk: least-tokens sees 3,000 prompt tokens on instance 0 and none on 1 and
    sends B there. C (100) just after A's first chunk: instance 0 has A (1 outstanding, 2,000 left to
    prefill), instance 1 has B (1, none left: its 200 are done); least-tokens counts the prompts of
    outstanding requests (3,000 against 200) and picks instance 1, round-robin instance 0.
    ``dispatched`` records what the router saw."""
    t1 = W + 1000 * TAU
    arrivals, prompts, outputs = [0.0, 0.005, t1 + 0.005], [3000, 200, 100], [50, 50, 50]
    tokens = _run(
        arrivals, prompts, outputs, _vllm(1000), instances=2, dispatch="least-tokens", draws=[0.0, 0.0, 0.0]
    )
    np.testing.assert_array_equal(tokens.dispatched, [[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0]])
    rr = _run(arrivals, prompts, outputs, _vllm(1000), instances=2)
    np.testing.assert_array_equal(rr.dispatched, [[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 2000, 0]])


def test_random_dispatch_is_fcfs_on_the_instance_each_draw_picks() -> None:
    """``random`` sends request k to instance ⌊u_k·n⌋; with one slot per instance each instance is then
    a FCFS queue of known service times (as in the one-slot test above)."""
    rng = np.random.default_rng(1)
    count, instances = 3000, 4
    arrivals = np.cumsum(rng.exponential(0.09, count))
    prompts = rng.integers(1, 3000, count)
    outputs = rng.integers(1, 40, count)
    draws = rng.random(count)
    run = _run(
        arrivals, prompts, outputs, _vllm(512), instances=instances, slots=1, dispatch="random", draws=draws
    )
    service = -(-prompts // 512) * W + TAU * prompts + (outputs - 1) * (W + H)
    owner = (draws * instances).astype(int)
    start = np.empty(count)
    for instance in range(instances):
        mine = owner == instance
        start[mine] = dispatch_known_service(arrivals[mine], service[mine], 1, 1, "pooled")
    assert (start > arrivals).mean() > 0.1
    np.testing.assert_allclose(run.departure_s, start + service, rtol=1e-12, atol=1e-9)


def _two_pool_fleet(kv: bool) -> list[SimulatedPool]:
    return [
        SimulatedPool(
            "short", 3, 4, 2048, 0.008, 0.002, 512, 8192, prefill_per_token_s=2e-5, ttft_overhead_s=0.01,
            kv_capacity_tokens=4096 if kv else None, attention_s_per_token_pair=1e-10,
        ),
        SimulatedPool(
            "long", 2, 2, 65536, 0.009, 0.001, 512, 8192, prefill_per_token_s=1e-5, kv_read_s_per_token=5e-7,
            kv_capacity_tokens=70_000 if kv else None,
        ),
    ]  # fmt: skip


def _reference_workload():
    rng = np.random.default_rng(0)
    inputs = np.minimum(rng.geometric(1 / 600, 500), 60000)
    outputs = np.minimum(rng.geometric(1 / 150, 500), 3000)
    return workload_from_requests(inputs, outputs, name="geo")


#: The engine before issue 30 (``physical`` at d4cd161) on :func:`_reference_workload` through the
#: fleet of :func:`_two_pool_fleet` without KV limits (and without the prompt attention, which that
#: engine did not have; the short pool's context 8,192), Routing.two_pool(2048, 1.5, 1.0) with no
#: cut cap (d4cd161 had none; max_cut_fraction=1.0), 4,000
#: requests, seed 5: the first 16 hex digits of the SHA-256 of each pool's slot-start, admission,
#: first-token and departure times (float64, concatenated in that order).
BEFORE_ISSUE_30 = {
    ("pooled", 20.0, "short"): "b374fad08f52223f",
    ("pooled", 20.0, "long"): "989d71ae8171fed7",
    ("pooled", 40.0, "short"): "d11db4606e35823a",
    ("pooled", 40.0, "long"): "197c2cc550072ac4",
    ("round-robin", 20.0, "short"): "981b62b731ca57fa",
    ("round-robin", 20.0, "long"): "989d71ae8171fed7",
    ("round-robin", 40.0, "short"): "c5e96dcb7875e424",
    ("round-robin", 40.0, "long"): "4b15272e94433438",
    ("least-loaded", 20.0, "short"): "e93849ce9109ffed",
    ("least-loaded", 20.0, "long"): "989d71ae8171fed7",
    ("least-loaded", 40.0, "short"): "b5935428d414b376",
    ("least-loaded", 40.0, "long"): "197c2cc550072ac4",
}


@pytest.mark.parametrize("dispatch", ["pooled", "round-robin", "least-loaded"])
def test_the_slots_scheduler_is_the_engine_before_bit_for_bit(dispatch: str) -> None:
    """No token budget, each prompt its own chunk per iteration, KV reserved per slot, the first token
    one iteration after the prompt and prompt tokens at τ: the engine reproduces the one it replaced
    to the last bit (compiled here; the interpreted engine is checked against this one below)."""
    workload = _reference_workload()
    pools = _two_pool_fleet(kv=False)  # what the slots scheduler ignores (attention) changes nothing
    for rate in (20.0, 40.0):
        traces = simulate_fleet(
            workload, pools, Routing.two_pool(2048, 1.5, 1.0, max_cut_fraction=1.0), arrival_rate_per_s=rate,
            service_model="physical", dispatch=dispatch, requests=4000, seeds=(5,), keep_requests=True,
            scheduler="slots",
        ).traces  # fmt: skip
        for trace in traces:
            times = np.concatenate(
                (trace.slot_start_s, trace.admission_s, trace.first_token_s, trace.departure_s)
            )
            digest = hashlib.sha256(times.tobytes()).hexdigest()[:16]
            assert digest == BEFORE_ISSUE_30[(dispatch, rate, trace.pool_name)], (rate, trace.pool_name)


_SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("scheduler", "dispatch"),
    [("vllm", "least-kv"), ("slots", "pooled")]
    + [pytest.param("vllm", d, marks=_SLOW) for d in DISPATCH_POLICIES if d != "least-kv"]
    + [pytest.param("slots", d, marks=_SLOW) for d in ("round-robin", "least-loaded")],
)
def test_compiled_and_interpreted_engines_give_the_same_trace(scheduler: str, dispatch: str) -> None:
    """The numba kernel and the same source interpreted agree to the last bit on every request's
    times and preemptions: queueing, C&R routing, a KV-read floor, attention costs and (``vllm``)
    preemptions, under every dispatch policy (the slow marks run the rest)."""
    pytest.importorskip("numba")
    workload = _reference_workload()
    traces = {}
    for jit in ("0", "1"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(engines.JIT_ENV, jit)
            traces[jit] = simulate_fleet(
                workload, _two_pool_fleet(kv=True), Routing.two_pool(2048, 1.5, 1.0, max_cut_fraction=1.0),
                arrival_rate_per_s=40.0,
                service_model="physical", dispatch=dispatch, requests=800, seeds=(5,), keep_requests=True,
                scheduler=scheduler,
            ).traces  # fmt: skip
    assert (traces["1"][0].slot_start_s > traces["1"][0].arrival_s).mean() > 0.05  # queueing happened
    preempted = 0
    for interpreted, compiled in zip(traces["0"], traces["1"], strict=True):
        for field in ("slot_start_s", "admission_s", "first_token_s", "departure_s", "preemptions"):
            assert np.array_equal(getattr(interpreted, field), getattr(compiled, field)), field
        preempted += int(compiled.preemptions.sum())
    assert (preempted > 0) == (scheduler == "vllm")  # the KV limit bites only under vllm


def test_attention_cost_per_token_pair_runs_at_the_prompts_dense_rate() -> None:
    """τ_a = τ·F_pair/(2·N): Llama-3.1-70B on 8× H100 (τ = 30.7 µs, N = 70.6e9, F_pair = 4·80·64·128):
    5.70e-10 s per pair, so a token at 64K of context costs 30.7 µs + 37 µs. Zero without the geometry."""
    from fleetopt.core.simulate import attention_s_per_token_pair

    tau_a = attention_s_per_token_pair(30.7e-6, 70.6e9, 4 * 80 * 64 * 128)
    assert tau_a == pytest.approx(30.7e-6 * 2_621_440 / 141.2e9, rel=1e-12)
    assert tau_a * 65536 == pytest.approx(3.735e-5, rel=1e-3)
    assert attention_s_per_token_pair(30.7e-6, 70.6e9, None) == 0.0
    assert attention_s_per_token_pair(30.7e-6, None, 1e6) == 0.0


@pytest.mark.parametrize("scheduler", ["vllm", "slots"])
def test_striding_over_unchanging_iterations_changes_no_time(scheduler: str) -> None:
    """Skipping, in one step, the iterations in which only decoding requests run and nothing can join
    them gives every request the same times, to the last bit, as stepping through each one: every
    dispatch policy, with a KV cache small enough to preempt."""
    rng = np.random.default_rng(4)
    count = 6000
    arrivals = np.cumsum(rng.exponential(1 / 30, count))
    prompts, outputs = rng.integers(1, 6000, count), rng.integers(1, 600, count)
    extra, draws = np.where(rng.random(count) < 0.3, 1e-4, 0.0), rng.random(count)
    settings = (
        IterationSettings(2048, None, 2000, 16, 0, 1e-10, 1e-8)
        if scheduler == "vllm"
        else IterationSettings(None, 512, None, 16, 1)
    )
    for dispatch in DISPATCH_POLICIES:
        runs = [
            run_iteration_engine(
                arrivals, prompts, outputs, extra, draws, instances=6, slots=16, base_s=0.01,
                per_decode_s=2e-4, per_prefill_token_s=3e-5, settings=settings, dispatch=dispatch,
                stride=stride,
            )
            for stride in (False, True)
        ]  # fmt: skip
        for field in (
            "slot_start_s",
            "admission_s",
            "first_token_s",
            "departure_s",
            "preemptions",
            "dispatched",
        ):
            assert np.array_equal(getattr(runs[0], field), getattr(runs[1], field)), (dispatch, field)
        assert (runs[0].preemptions > 0).any() == (scheduler == "vllm")


def test_least_loaded_sends_a_prompt_behind_the_prefill_it_just_started() -> None:
    """The mechanism behind least-loaded's worse P99 on slow-prefill pools (docs/validation.md), by
    hand. Two instances, budget 1,000. R1 (100 tokens, 2 outputs) → 0 and R2 (100, 400) → 1 at 0;
    R1 leaves after two iterations. R3 (4,000 tokens) at 0.1 s finds instance 0 empty and starts
    its four-chunk prefill there. R4 (100 tokens) at 0.2 s: both instances hold one request, so
    least-loaded takes the lower index — instance 0, behind R3's prefill, whose chunks take the whole
    budget — while round-robin (R4 is request 3: 3 mod 2 = 1) sends it to instance 1, which is only
    decoding. R4's first token: after R3's prefill under least-loaded, one iteration under
    round-robin."""
    arrivals, prompts, outputs = [0.0, 0.0, 0.1, 0.2], [100, 100, 4000, 100], [2, 400, 5, 5]
    ll = _run(arrivals, prompts, outputs, _vllm(1000), instances=2, dispatch="least-loaded")
    rr = _run(arrivals, prompts, outputs, _vllm(1000), instances=2, dispatch="round-robin")
    assert ll.dispatched[:, 0].tolist() == [0, 1, 0, 0]
    assert rr.dispatched[:, 0].tolist() == [0, 1, 0, 1]
    assert ll.dispatched[3, 2] > 0 and ll.dispatched[3, 3] == 0  # sent behind a prefill; instance 1 had none
    assert rr.dispatched[3, 2] == 0
    r3_prefill_end = ll.first_token_s[2]
    assert ll.first_token_s[3] > r3_prefill_end  # waited for R3's chunks
    assert rr.first_token_s[3] - arrivals[3] < 2 * (
        W + H + 100 * TAU
    )  # at most a boundary, then one iteration
