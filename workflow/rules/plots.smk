rule plot:
    """Draw one figure of either paper (PNG for the report, PDF for papers) from its tables."""
    input:
        unpack(
            lambda wildcards: PLAN.figure_tables(
                wildcards.figure, figure_marks(wildcards.figure)
            )
        ),
    output:
        png=report(
            "results/figures/{figure}.png",
            caption="../report/figure.rst",
            category=lambda wildcards: entry(wildcards.figure).category,
            labels=lambda wildcards: {"figure": report_label(wildcards.figure)},
        ),
        pdf="results/figures/{figure}.pdf",
    log:
        "results/logs/plots/{figure}.log",
    benchmark:
        "results/benchmarks/plots/{figure}.tsv"
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        **rule_params(
            "plot",
            caption=figure_caption,
            paper_values=lambda wildcards: json.dumps(figure_marks(wildcards.figure)),
        ),
    shell:
        JOB
