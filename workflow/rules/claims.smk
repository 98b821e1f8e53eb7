rule claims:
    """Check every quantitative claim of config/claims.yaml against the tables (verdict per claim)."""
    input:
        claims=CLAIMS_FILE,
        tables=all_tables(),
    output:
        csv=report(
            "results/claims.csv", caption="../report/claims.rst", category="Claims"
        ),
        md="results/claims.md",
    log:
        "results/logs/claims.log",
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        code=code_fingerprint("claims"),
    script:
        "../../scripts/claims.py"
