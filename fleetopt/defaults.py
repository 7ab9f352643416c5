"""The one place for fleetopt's constants and defaults, shared by core, io, the API and the CLI.

No heavy imports here: the CLI reads these at start-up, and core may import this module (it is
plain numbers, no files, printing or presentation libraries).
"""

#: The planner's default serving profile: Llama-3.1-70B (FP8) on 8× H100 with vLLM, measured
#: (profiles/serving/, fitted by scripts/calibrate_bundled.py; docs/profiles.md).
DEFAULT_SERVING = "llama-3.1-70b-fp8-h100-80gb-tp8-vllm"
#: The papers' Llama-3-70B / A100-80GB TP8 calibration (FACTS §1), for their tables.
PAPER_SERVING = "llama-3-70b-a100-80gb-tp8"
#: The service model the planner sizes with unless told otherwise (docs/math.md, "The engine model").
DEFAULT_SERVICE_MODEL = "engine"
#: How the simulator dispatches a pool's requests to its instances unless told otherwise: each to the
#: instance with the fewest requests (real routers balance load; round-robin and pooled stay options).
DEFAULT_DISPATCH = "least-loaded"
#: Arrival rate when the workload has no timestamps and none is given, req/s (FleetOpt §7.1).
DEFAULT_RATE_PER_S = 1000.0
#: The papers' long-pool (and homogeneous) context window, tokens.
DEFAULT_LONG_CONTEXT_TOKENS = 65_536
#: Utilization cap ρ_max of every pool (FleetOpt §4.1, Eq. 11).
DEFAULT_MAX_UTILIZATION = 0.85
#: The TTFT quantile an SLO is stated at (P99).
DEFAULT_QUANTILE = 0.99
#: Hours in a (non-leap) year: annual cost = GPUs × $/GPU-hour × this.
HOURS_PER_YEAR = 8760.0
#: The papers' A100-80GB price, USD per GPU-hour (FleetOpt §7.1; FACTS §1).
PAPER_GPU_HOUR_USD = 2.21
#: The compression bands γ the planner sweeps by default: 1.0, 1.1, …, 2.0.
DEFAULT_GAMMAS = tuple(round(1.0 + 0.1 * k, 1) for k in range(11))
#: The largest share of a prompt Compress-and-Route may cut (Routing.max_cut_fraction; 1 = the papers'
#: rule, no cap). 20%: the largest cut at which FleetOpt §5.2's compressor keeps the fidelity of the
#: paper's own evidence (Table 7's p10: ROUGE-L recall 0.783, TF-IDF cosine 0.963) on real English of
#: 2K–8K tokens — p10 0.784 and 0.969 at 20%, 0.730 and 0.956 at 25% (benchmarks/bench_compressor.py,
#: docs/gateway.md). Without it γ = 2 would cut up to half of a prompt.
DEFAULT_MAX_CUT_FRACTION = 0.2
#: The share p_c of compressible band requests the planner assumes are compressed: 0, Compress-and-Route
#: off. Only fleetopt's LiteLLM plugin compresses prompts (export --to litellm); how many band requests
#: it can compress depends on their content (never code or structured data: 44% of the Azure 2023
#: band is its code trace) and the cut they need, which a token-length log does not say. A plan that
#: relies on compression is a choice (--compressibility, measured with the plugin's counters), not a
#: default (docs/planner.md).
DEFAULT_COMPRESSIBILITY = 0.0
#: Pools a plan may use by default (the papers' short/long split).
DEFAULT_POOL_COUNT = 2
#: vLLM's default gpu_memory_utilization (pool-routing §4.7).
DEFAULT_MEMORY_UTILIZATION = 0.9
#: GB (10⁹ bytes) per GPU held for activations (pool-routing §4.7).
DEFAULT_ACTIVATION_RESERVE_GB = 10.0
#: vLLM / PagedAttention's default KV block size, tokens.
DEFAULT_KV_BLOCK_TOKENS = 16
#: A pool whose P99 TTFT (or TPOT) is within this fraction of its SLO is flagged: a few per cent
#: more traffic, a longer prompt mix or a model error of that size breaks it (issue 15). 5% (issue
#: 35; 2% before): the same margin as the flat-in-instances check below, and above the engine
#: model's P99 TTFT error on the pools it sizes well (0.6–1.1% high, docs/planner.md), so a warned
#: pool is one that a model error plus a few per cent more traffic breaks.
NEAR_SLO_FRACTION = 0.05
#: The planner also gives a TTFT-bound pool's P99 with this fraction fewer instances (at least one
#: fewer; the engine model), and flags the pool when that P99 is still within
#: :data:`FLAT_TTFT_FRACTION` of the SLO: the P99 then hardly depends on the instance count (the SLO
#: sits just above what a request's own prefill takes), so an error of a few per cent in the TTFT
#: law moves the pool by more than this fraction of its instances (docs/validation.md).
FEWER_INSTANCES_FRACTION = 0.1
FLAT_TTFT_FRACTION = 0.05
#: A pool (engine model) whose slot wait alone puts more than this fraction of the quantile's budget
#: (1 − q: 1% at the P99) over the TTFT SLO is flagged: its P99 is set by waiting for a KV slot,
#: where the occupancy chain is least accurate (docs/validation.md).
SLOT_WAIT_BUDGET_FRACTION = 0.25
#: TPOT above which a chat user reading along sees the stream stall, seconds: 100 ms = 10 tokens/s
#: ≈ 450 words/min at 0.75 words per token, nearly twice the average adult's silent reading rate
#: (238 words/min for non-fiction; Brysbaert, "How many words do we read per minute? A review and
#: meta-analysis of reading rate", J. Memory and Language 109, 2019), so only the fastest readers
#: catch up below it. The pool-routing paper's own TPOT SLO is 80 ms (arXiv 2604.09613 §4).
CHAT_TPOT_NOTICE_S = 0.1
