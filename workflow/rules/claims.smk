rule claims:
    """Check every quantitative claim of config/claims.yaml against the per-trial tables and
    the GN sweeps' tables (a bootstrap interval and a verdict per claim), and again under
    each reading of the paper's ambiguous settings."""
    input:
        claims=CLAIMS_FILE,
        tables=claims_tables(),
        gn_tables=all_gn_sweep_tables(),
    output:
        csv="results/claims.csv",
        parquet="results/claims.parquet",
        html=report(
            "results/claims.html", caption="../report/claims.rst", category="Claims"
        ),
        scorecard="results/scorecard.html",
        md="results/claims.md",
        summary="results/summary.md",
        readings="results/tables/readings.parquet",
        readings_csv="results/tables/readings.csv",
        readings_md="results/readings.md",
        calibration="results/tables/calibration.csv",
    log:
        "results/logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=20,
    params:
        **rule_params(
            "claims", settings_differ=lambda wildcards: claims_settings_differ()
        ),
    shell:
        JOB
