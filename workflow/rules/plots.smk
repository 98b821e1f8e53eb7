rule plot:
    """Draw one figure of the paper from its experiment's table (PNG and PDF)."""
    input:
        figure_table,
    output:
        png="results/figures/{figure}.png",
        pdf="results/figures/{figure}.pdf",
    log:
        "results/logs/plots/{figure}.log",
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        code=code_fingerprint("plotting"),
    script:
        "../../scripts/plot.py"
