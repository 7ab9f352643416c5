"""``fleetopt plan``: the cheapest routed fleet (two pools, or up to ``--pools K``) that meets the SLO."""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import (
    FORMAT_OPTION,
    INPUT_COLUMN_OPTION,
    INPUT_FORMAT_OPTION,
    LOG_FORMAT_OPTION,
    OUTPUT_COLUMN_OPTION,
    PROFILES_DIR_OPTION,
    SPLIT_OPTION,
    TIME_COLUMN_OPTION,
    TIME_UNIT_OPTION,
    reader_options,
)
from fleetopt.cli.export import KEDA_HELP, OUTPUT_DIR_HELP, TO_HELP, ExportTarget
from fleetopt.cli.prefix import BLOCK_SIZE_OPTION
from fleetopt.defaults import (
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_UTILIZATION,
    DEFAULT_POOL_COUNT,
    DEFAULT_SERVICE_MODEL,
    DEFAULT_SERVING,
)
from fleetopt.render.output import OutputFormat


def register(app: typer.Typer) -> None:
    """Add ``plan`` to ``app``."""
    app.command("plan")(plan)


def plan(
    cdf: str = typer.Option(
        ..., "--cdf", help="Workload: a bundled name (e.g. azure-2023) or a request log / CDF file."
    ),
    slo: str = typer.Option(..., "--slo", help="P99 time-to-first-token SLO, e.g. 500ms or 0.5s."),
    rate: float | None = typer.Option(
        None,
        "--rate",
        help="Mean arrival rate, req/s (a log's profile is scaled to it). Default: the log's observed "
        "rate, else 1,000 req/s.",
    ),
    rate_basis: str | None = typer.Option(
        None,
        "--rate-basis",
        help="What each pool is sized for: mean, peak or pNN (a percentile) of the rates in --rate-window "
        "windows, with the arrivals' burstiness within windows off the mean. Default: peak for a log "
        "with timestamps, else mean.",
    ),
    rate_window: str = typer.Option(
        "1min", "--rate-window", help="Window of the rate profile the basis is read from, e.g. 1min, 5min."
    ),
    schedule: str | None = typer.Option(
        None,
        "--schedule",
        help="Also the instances each pool needs in every window of this length (e.g. 1h) of the log's "
        "profile: periodic over a day or week when the log spans one, else over its span.",
    ),
    schedule_csv: Path | None = typer.Option(
        None, "--schedule-csv", help="With --schedule: write the schedule as CSV (atomically)."
    ),
    serving: str = typer.Option(
        DEFAULT_SERVING, "--serving", help="Serving profile (model × GPU × TP) of the short pool."
    ),
    serving_long: str | None = typer.Option(
        None,
        "--serving-long",
        help="Serving profile of the long pool and homogeneous baseline (default: --serving).",
    ),
    gpu: str | None = typer.Option(
        None, "--gpu", help="Use the --serving model's calibration on this GPU instead."
    ),
    gpu_long: str | None = typer.Option(None, "--gpu-long", help="The long pool on this GPU (same model)."),
    hardware: str | None = typer.Option(
        None,
        "--hardware",
        help="Choose every pool's serving profile: auto (every profile of the --serving model) or a comma "
        "list of profiles; each pool runs the cheapest that meets the SLO (docs/planner.md).",
    ),
    price: list[str] | None = typer.Option(
        None, "--price", help="A GPU type's $/GPU-hour, e.g. h100-80gb=2.10 (repeatable).", metavar="TYPE=$/h"
    ),
    max_gpus: list[str] | None = typer.Option(
        None,
        "--max-gpus",
        help="With --hardware: at most N GPUs of a type, e.g. b200=256 (repeatable).",
        metavar="TYPE=N",
    ),
    long_context: int = typer.Option(
        DEFAULT_LONG_CONTEXT_TOKENS, "--long-context", min=1, help="Context window of the long pool, tokens."
    ),
    b_short: str | None = typer.Option(
        None,
        "--b-short",
        help="Fix B_short (tokens), or a comma list. Default: a sweep of hardware-meaningful values.",
    ),
    gamma: str | None = typer.Option(
        None, "--gamma", help="Fix γ, or a comma list. Default: 1.0, 1.1, …, 2.0."
    ),
    compressibility: str = typer.Option(
        "0",
        "--compressibility",
        help="p_c: share of borderline requests C&R compresses, e.g. 0.75 or 75% (default 0: no compression; "
        "only export --to litellm deploys it).",
    ),
    max_cut: str = typer.Option(
        "20%",
        "--max-cut",
        help="The largest share of a prompt C&R may cut, e.g. 20% (the default: the most the compressor "
        "cuts with the fidelity of FleetOpt Table 7; docs/gateway.md). 100% is the papers' rule.",
    ),
    service_model: str = typer.Option(
        DEFAULT_SERVICE_MODEL,
        "--service-model",
        help="engine (token- and occupancy-aware, the default), lockstep (FleetOpt Eq. 3 as written) "
        "or fleet-sim (the papers' reference implementation).",
    ),
    max_utilization: str = typer.Option(
        str(DEFAULT_MAX_UTILIZATION),
        "--max-utilization",
        help="Utilization cap ρ_max in (0, 1], e.g. 0.85 or 85%.",
    ),
    pools: int = typer.Option(
        DEFAULT_POOL_COUNT,
        "--pools",
        min=2,
        max=8,
        help="Most pools a fleet may have: 2 = short/long; K > 2 also sweeps 3 … K pools exactly.",
    ),
    tpot_slo: str | None = typer.Option(
        None, "--tpot-slo", help="Cap on the iteration time (TPOT), e.g. 80ms."
    ),
    spare: int = typer.Option(
        0,
        "--spare",
        min=0,
        max=1000,
        help="Spare instances per pool: each pool still meets the SLO with N of its instances lost (N+1 "
        "sizing for N = 1).",
    ),
    ttft_headroom: str | None = typer.Option(
        None,
        "--ttft-headroom",
        help="Size the pools to a tighter P99 TTFT: the SLO less this share of it, e.g. 10%.",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the plan (.json/.yaml) atomically."
    ),
    input_format: str | None = INPUT_FORMAT_OPTION,
    log_format: str | None = LOG_FORMAT_OPTION,
    input_column: str | None = INPUT_COLUMN_OPTION,
    output_column: str | None = OUTPUT_COLUMN_OPTION,
    time_column: str | None = TIME_COLUMN_OPTION,
    time_unit: str | None = TIME_UNIT_OPTION,
    split: str | None = SPLIT_OPTION,
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
    prefix_caching: str = typer.Option(
        "off",
        "--prefix-caching",
        help="Charge prompts only their uncached tokens: off (every token, today's plan), auto (hit rates "
        "simulated from the log's block hashes, Mooncake hash_ids; else the cached tokens the log reports, "
        "as given: the production fleet's; as off without either) or hit-rate:F (a given share, e.g. "
        "hit-rate:30%).",
    ),
    prefix_dispatch: str = typer.Option(
        "random",
        "--prefix-dispatch",
        help="With --prefix-caching auto: how the simulated caches receive requests, random (a "
        "cache-oblivious router) or affinity (the instance with the longest cached prefix, load-bounded).",
    ),
    block_size: int = BLOCK_SIZE_OPTION,
    validate: bool = typer.Option(
        False, "--validate", help="Simulate the plan's fleet and compare it with the predictions."
    ),
    sim_requests: int | None = typer.Option(
        None,
        "--sim-requests",
        help="With --validate: requests per seed (default: sized to warm up, and a pool measured on fewer "
        "than 60,000 per seed simulated again on its own stream); with a replay or profile, its first N "
        "arrivals (default: the whole log).",
    ),
    sim_seeds: int | None = typer.Option(
        None,
        "--sim-seeds",
        help="With --validate: seeds (replications). Default: 3 (more for a replay or profile whose rarest "
        "pool needs them, at most 10).",
    ),
    replay: bool = typer.Option(
        False,
        "--replay",
        help="With --validate: replay the log's arrival times at the plan's mean rate, on their own time "
        "scale (--arrivals replay).",
    ),
    arrivals: str | None = typer.Option(
        None,
        "--arrivals",
        help="With --validate: poisson (at the rate the plan was sized for), replay or profile (Poisson "
        "following the log's windowed rate profile, at the plan's mean). Default: poisson.",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="With --validate: exit 1 on FAIL and on INCONCLUSIVE (too few requests, or a P99 interval "
        "straddling the SLO); the plan and report are printed (and written) first.",
    ),
    refine: int | None = typer.Option(
        None,
        "--refine",
        min=1,
        max=50,
        help="Re-size the K cheapest fleets by simulation (each pool's fewest instances whose simulated P99 "
        "TTFT meets the SLO with 95% confidence, under --dispatch) and keep the cheapest that passes. "
        "Seconds of CPU per fleet (docs/validation.md).",
    ),
    dispatch: str | None = typer.Option(
        None,
        "--dispatch",
        help="The router policy the plan states, --refine simulates and export configures: least-loaded "
        "(the default), round-robin, least-waiting, least-kv, least-tokens, random or pooled.",
    ),
    export: list[ExportTarget] | None = typer.Option(
        None, "--export", help="Also export the plan (as fleetopt export --to): " + TO_HELP, metavar="TARGET"
    ),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", help="With --export: " + OUTPUT_DIR_HELP, file_okay=False
    ),
    keda: bool = typer.Option(False, "--keda", help="With --export kubernetes: " + KEDA_HELP),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Plan the cheapest fleet (n_s, n_l, B*, γ*) that meets a P99 TTFT SLO, against the baselines."""
    from fleetopt.api import plan_run_from_options
    from fleetopt.errors import FleetoptError
    from fleetopt.io.plans import plan_format_for, refuse_overwriting_input, write_document_atomically
    from fleetopt.render.output import dumps, emit
    from fleetopt.render.plan import draw_plan

    if output is not None:
        output_format = plan_format_for(output)  # refuse a bad suffix before any work
        refuse_overwriting_input(output, [cdf])
    if schedule_csv is not None:
        if schedule is None:
            raise typer.BadParameter("--schedule-csv needs --schedule WINDOW", param_hint="--schedule-csv")
        refuse_overwriting_input(schedule_csv, [cdf])
    if export and fmt is not OutputFormat.table and output_dir is None:
        raise typer.BadParameter(
            f"--export with --format {fmt.value} needs --output-dir (stdout holds the plan document)",
            param_hint="--export",
        )
    run = plan_run_from_options(
        workload=cdf,
        slo=slo,
        mean_rate_per_s=rate,
        serving=serving,
        serving_long=serving_long,
        gpu=gpu,
        gpu_long=gpu_long,
        hardware=hardware,
        price=price or (),
        max_gpus_per_type=max_gpus or (),
        long_context_tokens=long_context,
        b_short=b_short,
        gamma=gamma,
        compressibility=compressibility,
        max_cut_fraction=max_cut,
        service_model=service_model,
        max_utilization=max_utilization,
        max_pools=pools,
        tpot_slo=tpot_slo,
        spare_instances=spare,
        ttft_headroom=ttft_headroom,
        reader_options=reader_options(
            input_format, log_format, input_column, output_column, time_column, time_unit, split
        ),
        profiles_dir=profiles_dir,
        prefix_caching=prefix_caching,
        prefix_dispatch=prefix_dispatch,
        block_size_tokens=block_size,
        rate_basis=rate_basis,
        rate_window=rate_window,
        schedule=schedule,
        refine=refine,
        dispatch=dispatch,
    )
    document = run.document
    if document.get("prefix_caching") and any(
        pool["source"] == "reported" for pool in document["prefix_caching"]["pools"].values()
    ):
        from fleetopt.api.prefix import partial_cache_warning

        partial = partial_cache_warning(run.workload.metadata["reported_cache"])
        if partial:
            typer.echo(f"warning: {partial}", err=True)
    strict_error = None
    if (strict or replay or arrivals is not None or sim_requests is not None) and not validate:
        raise typer.BadParameter(
            "--strict, --replay, --arrivals and --sim-requests apply to --validate", param_hint="--validate"
        )
    if not (validate and document["feasible"]):
        emit(document, fmt, draw_plan)
    else:  # the plan first for people (the simulation takes a while), one document for machines
        from fleetopt.api import crosscheck_plan_run
        from fleetopt.cli.common import progress_bar
        from fleetopt.render.simulate import draw_crosscheck

        if fmt is OutputFormat.table:
            emit(document, fmt, draw_plan)
        with progress_bar(fmt) as progress:
            check = crosscheck_plan_run(
                run,
                requests=sim_requests,
                seeds=sim_seeds,
                progress=progress,
                arrivals=arrivals,
                replay=replay,
            )
        crosscheck = check.document()
        if fmt is OutputFormat.table:
            emit(crosscheck, fmt, draw_crosscheck)
        else:
            emit({**document, "validation": crosscheck}, fmt, draw_plan)
        if strict:
            from fleetopt.render.simulate import strict_failure

            strict_error = strict_failure(crosscheck)
    if not document["feasible"]:
        raise FleetoptError(
            "no fleet meets the SLO and the utilization cap; nothing was written"
            if output
            else "no fleet meets the SLO and the utilization cap"
        )
    if output is not None:
        write_document_atomically(output, dumps(document, output_format))
        if fmt is OutputFormat.table:
            typer.echo(f"plan written to {output}")
    if schedule_csv is not None and document.get("schedule"):
        from fleetopt.io.plans import schedule_csv as schedule_csv_text

        write_document_atomically(schedule_csv, schedule_csv_text(document["schedule"]))
        if fmt is OutputFormat.table:
            typer.echo(f"schedule written to {schedule_csv}")
    if export:
        import json
        import shlex

        from fleetopt.cli.export import write_export
        from fleetopt.io.plans import plan_file_from_document

        label = str(output) if output is not None else f"fleetopt plan --cdf {shlex.quote(cdf)}"
        plan_file = plan_file_from_document(json.loads(dumps(document, "json")), f"plan of {cdf}")
        write_export(
            plan_file, [t.value for t in export], keda=keda, output_dir=output_dir,
            inputs=[cdf] + ([str(output)] if output is not None else []), profiles_dir=profiles_dir,
            plan_label=label, echo_written=fmt is OutputFormat.table,
        )  # fmt: skip
    if strict_error is not None:
        raise strict_error
