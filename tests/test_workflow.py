"""End to end: the small config runs, outputs are as documented, and config edits rerun only
what they change (read off the job list of `snakemake -n`)."""

import filecmp
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from safetensors.numpy import load_file
from support import REPO, SNAKEMAKE, copy_of_repo, run_snakemake

from matcond.claims.evaluate import CLAIM_COLUMNS, VERDICTS
from matcond.claims.readings import SENSITIVITY_COLUMNS
from matcond.core.config import load_yaml, validate_config
from matcond.core.trials import all_trials, blocks_of
from matcond.figures.captions import report_label
from matcond.figures.catalog import FIGURES
from matcond.figures.overview import entry
from matcond.pipeline.plan import Plan

pytestmark = pytest.mark.workflow  # the whole small config runs (and reruns) end to end

SMALL = validate_config(load_yaml(REPO / "config" / "test" / "config.yaml"))
# the small run's figures: every figure of the catalog, and the overviews of the experiments
# none of them draws
DRAWN = Plan(SMALL, all_trials(SMALL)).drawn
TRIAL_COLUMNS = [
    "epoch",
    "component",
    "trained",
    "target",
    "error",
    "loss",
    "diverged",
    "diverged_epoch",
]


def snakemake(
    workdir: Path, *args: str, config: str = "config.yaml", snakefile: Path = REPO / "Snakefile"
) -> str:
    proc = run_snakemake(
        workdir, "--cores", "2", *args, configfile=workdir / config, snakefile=snakefile
    )
    return proc.stdout + proc.stderr


def planned_jobs(
    workdir: Path, config: dict, *args: str, snakefile: Path = REPO / "Snakefile"
) -> list[tuple[str, str]]:
    """(rule, first output) of every job a dry run with ``config`` (and Snakemake's ``args``)
    would execute. The config file's name is this process's own: tests on other workers
    dry-run the shared small run with configs of theirs (one name for all let one test plan
    with another's config)."""
    name = f"edited-{os.getpid()}.yaml"
    (workdir / name).write_text(yaml.safe_dump(config))
    out = snakemake(workdir, "-n", *args, config=name, snakefile=snakefile)
    blocks = re.split(r"^(?:local)?rule (\w+):$", out, flags=re.M)[1:]
    jobs = []
    for rule, body in zip(blocks[::2], blocks[1::2], strict=True):
        output = re.search(r"^    output: ([^,\n]+)", body, flags=re.M)
        jobs.append((rule, output.group(1) if output else ""))
    return sorted(jobs)


def downstream(jobs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [job for job in jobs if job[0] != "train"]


def downstream_of(experiment: str, *figures: str, theory: bool = False) -> list[tuple[str, str]]:
    """Jobs that must follow new trials of ``experiment``: its table, its figures, the claims
    and the readings figure they feed, the list of diverged trials, and the theory table and
    the figures drawn from it if the theory covers it."""
    theory_jobs = [("theory", "results/tables/theory.parquet")] if theory else []
    figures = (*figures, "readings", *(("theory", "theory_held_out") if theory else ()))
    return sorted(
        [
            ("aggregate", f"results/tables/{experiment}.parquet"),
            ("all", ""),
            ("claims", "results/claims.csv"),
            ("divergence", "results/tables/diverged_trials.csv"),
            *theory_jobs,
            *(("plot", f"results/figures/{figure}.png") for figure in figures),
        ]
    )


@pytest.fixture(scope="module")
def small_config() -> dict:
    return load_yaml(REPO / "config" / "test" / "config.yaml")


@pytest.fixture(scope="module")
def finished(small_run) -> Path:
    """The finished run of the small config (tests/conftest.py), shared with other tests."""
    return small_run


def trial_paths(workdir: Path) -> list[Path]:
    return sorted((workdir / "results" / "trials").rglob("*.parquet"))


def config_blocks(config: dict) -> list:
    """The training blocks of a config (validated here)."""
    config = validate_config(yaml.safe_load(yaml.safe_dump(config)))
    trials = [t for ts in all_trials(config).values() for t in ts]
    return blocks_of(trials, config["block_size"])


def sharing(config: dict, trained: list[str]) -> set[str]:
    """The experiments with a trial in one of the blocks whose manifests are ``trained``."""
    paths = {out.removeprefix("results/trials/").removesuffix(".json") for out in trained}
    in_blocks = {t.path for b in config_blocks(config) if b.path in paths for t in b.trials}
    trials = all_trials(validate_config(yaml.safe_load(yaml.safe_dump(config))))
    return {e for e, ts in trials.items() if any(t.path in in_blocks for t in ts)}


def test_every_expected_output_exists(finished, small_config):
    config = validate_config(small_config)
    expected = {
        f"results/trials/{t.path}.parquet" for ts in all_trials(config).values() for t in ts
    }
    assert {str(p.relative_to(finished)) for p in trial_paths(finished)} == expected
    trials_dir = finished / "results" / "trials"
    manifests = {str(p.relative_to(finished)) for p in trials_dir.rglob("seeds*.json")}
    assert manifests == {f"results/trials/{b.path}.json" for b in config_blocks(config)}
    # weights only where the workflow reads them: the GN parts' trials (exp7_depth's nets of
    # gauss_newton.exp7.models, and exp7_along_training, which saves every recorded epoch)
    # and the depth formula's (exp_depth_theory saves every recorded epoch too)
    gn_models = config["gauss_newton"]["exp7"]["models"]
    read = {
        f"results/trials/{t.path}.safetensors"
        for name, ts in all_trials(config).items()
        for t in ts
        if t.spec["save_recorded_weights"]
        or (name == "exp7_depth" and t.spec["model"] in gn_models)
        or name == "exp_depth_limits"
    }
    saved = {str(p.relative_to(finished)) for p in trials_dir.rglob("*.safetensors")}
    # 12 for the GN parts, 36 + 6 for the depth formula
    assert saved == read and len(saved) == 12 + 36 + 6
    depth = pd.read_parquet(finished / "results" / "per_trial" / "depth_theory.parquet")
    cells = depth.groupby(["model", "depth", "init_scale", "optimizer"], dropna=False)
    assert cells.ngroups == 12 + 2
    # depth_check asks for trials of exp_depth_theory: each is compared once
    rows = depth[(depth["matrix"] == "product") & (depth["component"] == "condition_number")]
    assert not rows.duplicated(["model", "depth", "init_scale", "optimizer", "seed"]).any()
    assert len(rows) == (12 + 2) * 3
    assert len(pd.read_csv(finished / "results" / "tables" / "depth_theory.csv")) > 0
    for name in config["experiments"]:
        for ext in ("parquet", "csv"):
            assert (finished / "results" / "tables" / f"{name}.{ext}").stat().st_size > 0
        assert (finished / "results" / "per_trial" / f"{name}.parquet").stat().st_size > 0
        table = pd.read_parquet(finished / "results" / "tables" / f"{name}.parquet")
        assert (table["ci_low"].dropna() >= 0).all(), name  # intervals of errors stay >= 0
        assert (table["ci_low"].dropna() <= table["estimate"][table["ci_low"].notna()]).all()
    for name in ("theory.csv", "readings.csv"):
        assert len(pd.read_csv(finished / "results" / "tables" / name)) > 0
    assert set(config["experiments"]) >= {e for f in FIGURES.values() for e in f.experiments}
    assert set(DRAWN) > set(FIGURES)  # with overviews
    for name in DRAWN:
        for ext in ("png", "pdf"):
            assert (finished / "results" / "figures" / f"{name}.{ext}").stat().st_size > 1000
    claims = pd.read_csv(finished / "results" / "claims.csv")
    assert list(claims.columns) == [*CLAIM_COLUMNS, *SENSITIVITY_COLUMNS]
    assert set(claims["verdict"]) <= set(VERDICTS)
    assert (claims["verdict"] != "not comparable").sum() > len(claims) / 2
    # the small config is not the paper config: the papers' claims are measured, not judged
    papers = claims[claims["source"] != "own check"]
    assert (papers["verdict"] == "settings differ").all()
    assert papers["note"].str.contains(r"epochs: 20 \(paper config: 200\)").any()
    compared = claims[claims["ci_low"].notna()]
    # up to rounding: with n = 2 the widest resample's std is the sample's own, summed in
    # another order (it came out one ulp below it)
    ulps = 4 * np.finfo(float).eps * compared["measured"].abs()
    assert (compared["ci_low"] - ulps <= compared["measured"]).all()
    assert (compared["measured"] <= compared["ci_high"] + ulps).all()
    values = compared[(compared["kind"] == "value") & compared["claim_id"].str.contains("kappa")]
    assert (values["ci_low"] >= 0).all()  # a non-negative quantity keeps a non-negative interval


def test_trial_table_schema(finished):
    path = next(p for p in trial_paths(finished) if "/d8/adam-" in str(p) and "/linear/" in str(p))
    table = pd.read_parquet(path)
    assert list(table.columns[-len(TRIAL_COLUMNS) :]) == TRIAL_COLUMNS
    assert {"dim", "optimizer", "lr", "seed", "structure", "row_log_std"} <= set(table.columns)
    assert table["optimizer"].unique().tolist() == ["adam"]
    assert table["matrix"].unique().tolist() == ["product"]
    assert table["epoch"].unique().tolist() == [20]
    assert table["error"].dtype == "float64" and table["diverged"].dtype == bool
    assert not path.with_suffix(".safetensors").exists()  # no GN part reads its weights
    relu = (p for p in trial_paths(finished) if "/relu_mlp/" in str(p) and "/d8/" in str(p))
    path = next(p for p in relu if "-rec0-" in str(p))
    weights = load_file(path.with_suffix(".safetensors"))
    assert {name.split(".")[0] for name in weights} == {"final", "initial", "target"}
    assert weights["final.layer1"].shape == (8, 8)


def test_experiment_table_schema(finished):
    table = pd.read_parquet(finished / "results" / "tables" / "exp2_optimizer.parquet")
    expected = [
        "experiment",
        "lr",
        "optimizer",
        "matrix",
        "epoch",
        "component",
        "statistic",
        "estimate",
        "ci_low",
        "ci_high",
    ]
    assert list(table.columns[: len(expected)]) == expected
    assert {"median", "q25", "q75", "n", "n_diverged", "n_nonfinite"} <= set(table.columns)
    assert {"mean_ci_low", "median_ci_high", "abslog_mean"} <= set(table.columns)
    assert set(table["n"]) == {2}
    assert len(table) == 2 * table["component"].nunique()


def test_no_edit_schedules_nothing(finished, small_config):
    """The run's config file rewritten with its keys sorted (yaml.safe_dump): nothing to do."""
    assert planned_jobs(finished, small_config) == []


@pytest.mark.parametrize("device", ["auto", "cuda"])
def test_another_device_reruns_nothing(finished, small_config, device):
    """device is an execution choice (each manifest says where its block trained)."""
    assert planned_jobs(finished, {**small_config, "device": device}) == []
    manifest = next((finished / "results" / "trials").rglob("seeds*.json"))
    assert json.loads(manifest.read_text())["device"] == "cpu"


def test_adding_a_dimension_runs_only_its_trials_and_their_downstream(finished, small_config):
    config = yaml.safe_load(yaml.safe_dump(small_config))
    config["experiments"]["exp1_dimension"]["grid"]["dim"].append(16)
    jobs = planned_jobs(finished, config)
    trained = [out for rule, out in jobs if rule == "train"]
    assert len(trained) == 1 and "/d16/" in trained[0]  # its two seeds: one block
    assert downstream(jobs) == downstream_of(
        "exp1_dimension", "ctrl_effective_rank", "fig1_dimension", theory=True
    )


def test_the_small_runs_console_shows_progress_and_problems_only(finished):
    """The small run's console (the profile's logger, src/snakemake_logger_plugin_matcond):
    its job counts in one line, ten progress lines, the diverged trials' line; no job's
    description and not Snakemake's banner. The complete log keeps every job's."""
    console = (finished.parent / "small_run.console").read_text()
    lines = console.splitlines()
    assert len(lines) <= 40, len(lines)
    assert [x for x in lines if re.fullmatch(r"\d+ jobs: \d+ \w+(, \d+ \w+)*", x)]
    assert "Job stats:" not in console and "Workflow ID" not in console
    progress = [x for x in lines if re.fullmatch(r"\d+ of \d+ steps \(\d+%\) done", x)]
    assert 10 <= len(progress) <= 12 and progress[-1].endswith("(100%) done")
    assert not any(re.match(r"(local)?rule \w+:$", x) for x in lines)
    assert "trials diverged" in console
    assert "(a smoke test), not judged; the paper run's verdicts" in console
    log = sorted((finished / ".snakemake" / "log").glob("*.snakemake.log"))[0].read_text()
    assert len(re.findall(r"^(?:local)?rule train:$", log, flags=re.M)) > 10


def test_adding_seeds_reruns_only_their_blocks_and_what_reads_them(finished, small_config):
    """A 13th seed of exp1_dimension (its pool has 12) joins the block of seeds 0-63 of each of
    its two settings: those two blocks are trained again, and every experiment with a trial in
    them (its settings are shared with others) is aggregated again; no other block is
    trained."""
    config = yaml.safe_load(yaml.safe_dump(small_config))
    config["experiments"]["exp1_dimension"]["seeds"] = 13
    jobs = planned_jobs(finished, config)
    trained = [out for rule, out in jobs if rule == "train"]
    assert len(trained) == 2 and all(out.endswith("/seeds0-63.json") for out in trained)
    assert {"/d4/", "/d8/"} == {re.search(r"/d\d+/", out).group() for out in trained}
    aggregated = {
        out.split("/")[-1].removesuffix(".parquet") for r, out in jobs if r == "aggregate"
    }
    assert "exp1_dimension" in aggregated and aggregated == sharing(config, trained)
    assert {r for r, _ in jobs} <= {"train", "aggregate", "theory", "plot", "claims"} | {
        "divergence",
        "all",
    }


def test_changing_adams_learning_rate_reruns_only_adam(finished, small_config):
    config = yaml.safe_load(yaml.safe_dump(small_config))
    config["experiments"]["exp2_optimizer"]["variants"][1]["lr"] = 0.002
    jobs = planned_jobs(finished, config)
    trained = [out for rule, out in jobs if rule == "train"]
    assert len(trained) == 1 and "/adam-lr0.002-" in trained[0]
    assert downstream(jobs) == downstream_of("exp2_optimizer", "fig2_optimizer")


def test_rerun_of_a_block_is_bit_identical(finished, tmp_path):
    """A block that saves weights (exp7_along_training's), forced to train again: its manifest,
    tables and weights are rewritten with the same bytes."""
    copy = tmp_path / "copy"
    shutil.copytree(finished, copy, symlinks=True)
    manifests = (copy / "results" / "trials" / "relu_mlp").rglob("*-weights-*/seeds0-63.json")
    manifest = next(manifests)
    target = str(manifest.relative_to(copy))
    snakemake(copy, "--force", target, "--cores", "1")
    rewritten = [manifest, *manifest.parent.glob("seed[0-9]*.*")]
    assert len(rewritten) == 5  # two trials, a table and weights each
    for path in rewritten:
        assert path.stat().st_mtime > (finished / path.relative_to(copy)).stat().st_mtime
        assert filecmp.cmp(path, finished / path.relative_to(copy), shallow=False), path


def test_bundles_train_the_same_bytes_and_a_changed_setting_trains_its_bundle_again(
    finished, small_config, tmp_path
):
    """With train_job_seconds (the SLURM profile's bundles of blocks), the training jobs alone
    write every trial file and block manifest of the small run with its bytes; then a
    changed learning rate trains again only the bundle that holds its new block (or the two
    it splits into), none of the others."""

    def plan_of(config: dict) -> Plan:
        validated = validate_config(yaml.safe_load(yaml.safe_dump(config)))
        return Plan(validated, all_trials(validated))

    config = yaml.safe_load(yaml.safe_dump(small_config))  # a copy: the fixture is shared
    config["train_job_seconds"] = 0.2
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    plan = plan_of(config)
    assert len(plan.train_jobs) > 2
    snakemake(tmp_path, *plan.manifests())
    trained = {
        p.relative_to(tmp_path): p.read_bytes()
        for p in (tmp_path / "results" / "trials").rglob("seed*")
    }
    small = {
        p.relative_to(finished): p.read_bytes()
        for p in (finished / "results" / "trials").rglob("seed*")
    }
    assert trained.keys() == small.keys() and trained == small
    config["experiments"]["exp2_optimizer"]["variants"][1]["lr"] = 0.002
    rerun = [out for rule, out in planned_jobs(tmp_path, config) if rule == "train"]
    edited = plan_of(config)
    assert 1 <= len(rerun) <= 2 and set(rerun) <= set(edited.manifests())
    assert len(set(plan.manifests()) - set(edited.manifests())) == 1
    blocks = [b.path for out in rerun for b in edited.train_jobs[out[15:-5]]]
    assert any("/adam-lr0.002-" in path for path in blocks)


@pytest.fixture(scope="module")
def report(finished) -> Path:
    out = finished / "report.html"
    snakemake(finished, "--report", str(out))
    return out


def test_report_shows_every_figure(report):
    html = report.read_text(errors="replace")
    for name in DRAWN:
        assert f"{name}.png" in html
    assert "claims.html" in html and "diverged_trials.html" in html


CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (.ci/run installs Debian's)"
)


@pytest.fixture
def browser_page():
    """A headless Chromium page 1280 px wide, and the page errors it records."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        yield page, errors
        browser.close()


@needs_chromium
def test_report_renders_in_a_browser(report, browser_page):
    """Headless Chromium opens every category of the report, shows each result (every figure
    loads under its label, the claims and diverged-trials tables render as tables) and its
    caption; no page error, no docutils message."""
    page, errors = browser_page
    categories = sorted({entry(name).category for name in DRAWN} | {"Claims"})
    shown = set()
    page.goto(report.as_uri())
    page.wait_for_selector("text=RESULTS")
    for category in categories:
        page.get_by_text(category, exact=True).click()
        for i in range(page.locator("nav table tbody tr").count()):
            row = page.locator("nav table tbody tr").nth(i)
            name = row.locator("td").first.inner_text().strip()
            row.locator("a").nth(0).click()  # show the result
            if name.endswith(".html"):
                rows = page.frame_locator("iframe").locator("table tr")
                rows.first.wait_for()
                assert rows.count() >= 1, name
            else:
                image = page.locator("img[src^='data:image/png']")
                image.wait_for()
                assert image.evaluate("e => e.complete && e.naturalWidth > 100"), name
            row.locator("a").nth(1).click()  # its caption
            caption = page.inner_text("nav")
            assert "DESCRIPTION" in caption.upper(), name
            assert "System Message" not in caption and "Docutils" not in caption, name
            shown.add(name)
            page.get_by_text(category, exact=True).click()  # back to the category
        page.get_by_text("Results", exact=True).click()
    assert errors == []
    expected = {report_label(name) for name in DRAWN}
    assert expected | {"results/claims.html", "results/diverged_trials.html"} <= shown


@needs_chromium
def test_report_opens_on_the_scorecard_and_its_claims_page_fits_1280px(
    report, finished, browser_page
):
    """The landing page's scorecard has the claims table's counts per source and verdict; a
    count opens the claims page, whose verdict column is on screen at 1280 px, with no
    horizontal scrolling, and whose scorecard has the same counts."""
    page, errors = browser_page
    claims = pd.read_csv(finished / "results" / "claims.csv")
    expected = {
        (source, verdict): int(n)
        for (source, verdict), n in claims.groupby(["source", "verdict"]).size().items()
    }

    def counts(table) -> dict:
        read = {}
        for cell in table.locator("td[data-verdict]").all():
            key = (cell.get_attribute("data-source"), cell.get_attribute("data-verdict"))
            if key[1] != "claims" and int(cell.inner_text()):
                read[key] = int(cell.inner_text())
        return read

    page.goto(report.as_uri())
    landing = page.locator("table.scorecard")
    landing.wait_for()
    assert counts(landing) == expected
    landing.locator("a").first.click()
    page.locator("nav table tbody tr a").first.click()  # the Claims category's first result
    frame = page.frame_locator("iframe")
    assert counts(frame.locator("table.scorecard")) == expected
    badge = frame.locator("table.claims .verdict").first
    box = badge.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    assert frame.locator("table.claims .verdict").count() == len(claims)
    width = frame.locator("html").evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert width[0] <= width[1], width
    assert errors == []


@needs_chromium
def test_a_landing_count_opens_its_claims_and_a_claim_shows_its_figure(report, browser_page):
    """On the report's landing page, in Chromium: a finding's claim opens the folded list that
    holds it, a verdict's count opens the list of those claims (as many as it says), and a
    figure named under a claim shows that figure's image with its caption panel, in one click
    each."""
    page, errors = browser_page
    page.goto(report.as_uri())
    finding = page.locator("li.finding a").last
    finding.wait_for()
    claim = page.locator(f"li[id='claim-{finding.inner_text()}']")
    assert not claim.is_visible()
    finding.click()  # a javascript: link runs as a task after the click returns: wait for it
    claim.wait_for(state="visible")
    assert claim.evaluate("e => e.closest('details').open")
    page.goto(report.as_uri())  # every list folded again
    cell = page.locator("table.scorecard td[data-verdict]:not([data-verdict='claims']) a").first
    cell.wait_for()
    count = int(cell.inner_text())
    source = cell.locator("..").get_attribute("data-source")
    verdict = cell.locator("..").get_attribute("data-verdict")
    group = page.locator(f"details#claims-{source.replace(' ', '-')}-{verdict.replace(' ', '-')}")
    assert not group.evaluate("e => e.open")
    cell.click()
    group.locator("li").first.wait_for(state="visible")
    assert group.evaluate("e => e.open")
    assert group.locator("li").count() == count and group.locator("li").first.is_visible()
    link = page.locator("details[open] li a").first
    title = link.inner_text()
    link.click()
    image = page.locator("img[src^='data:image/png']")
    image.wait_for()
    assert image.evaluate("e => e.complete && e.naturalWidth > 100")
    caption = page.inner_text("nav")
    assert "DESCRIPTION" in caption.upper() and title in caption
    assert errors == []


HOSTILE = "</script><script>window.pwned = 1</script> $\\alpha$ & {{ x }}"


@pytest.fixture(scope="module")
def hostile_report(finished, tmp_path_factory) -> Path:
    """The small run's report built by a copy of the workflow whose config and claims file
    carry hostile text: exp2_optimizer's description (it reaches every job's params, which
    the report keeps inside a <script>) and claim exp2_overall_sgd's statement and place
    (Fig. 2's caption, reST) end a script and start one, and a directive includes a file."""
    root = copy_of_repo(
        tmp_path_factory.mktemp("hostile"), ("Snakefile", "workflow", "scripts", "config")
    )
    secret = root / "secret.txt"
    secret.write_text("SECRET-FILE-CONTENT")
    directive = f"\n\n.. raw:: html\n   :file: {secret}\n\nafter"
    claims = load_yaml(root / "config" / "claims.yaml")
    claim = next(c for c in claims["claims"] if c["claim_id"] == "exp2_overall_sgd")
    claim.update(statement=HOSTILE + directive, where=HOSTILE)
    (root / "config" / "claims.yaml").write_text(yaml.safe_dump(claims, allow_unicode=True))
    run = root / "run"
    shutil.copytree(finished, run, symlinks=True)
    config = load_yaml(run / "config.yaml")
    config["experiments"]["exp2_optimizer"]["description"] = HOSTILE + directive
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [SNAKEMAKE, "-s", root / "Snakefile", "--directory", run]
    cmd += ["--configfile", run / "config.yaml", "--report", run / "report.html"]
    proc = subprocess.run([*map(str, cmd)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return run / "report.html"


@needs_chromium
def test_hostile_text_in_config_and_claims_runs_no_script_and_includes_no_file(
    hostile_report, browser_page
):
    """The hostile report opens, Fig. 2's caption shows the claim's text as text (so it did
    reach the report), no script of it runs (no window.pwned, no page error: an ended
    <script> would leave a syntax error) and no file is included."""
    assert "SECRET-FILE-CONTENT" not in hostile_report.read_text(errors="replace")
    page, errors = browser_page
    page.goto(hostile_report.as_uri())
    page.wait_for_selector("text=RESULTS")
    page.get_by_text(FIGURES["fig2_optimizer"].category, exact=True).click()
    row = page.locator("nav table tbody tr", has_text=report_label("fig2_optimizer"))
    row.locator("a").nth(1).click()  # its caption
    caption = page.inner_text("nav")
    caption = " ".join(caption.split())
    assert f"{HOSTILE} .. raw:: html :file: " in caption and f"({HOSTILE}): 0.14" in caption
    assert page.evaluate("window.pwned") is None
    assert errors == []


def test_timestamps_alone_rerun_nothing(finished, small_config, tmp_path):
    """A copy of the results (new mtimes, in walk order; as deep as the original below the
    workflow, which claims.yaml is read relative to) after `touch` of every script and package
    source file: nothing to be done."""
    copy = finished.with_name(f"{finished.name}_copy")
    shutil.copytree(finished, copy, symlinks=True, copy_function=shutil.copy)
    for path in [*(REPO / "scripts").glob("*.py"), *(REPO / "src").rglob("*.py")]:
        os.utime(path)
    assert planned_jobs(copy, small_config) == []


def test_a_job_module_edit_reruns_exactly_its_rules_jobs(finished, small_config, tmp_path):
    """matcond/jobs/plot.py gains a comment: the plot jobs rerun, nothing else. The edit is
    made in a copy of the checkout, whose Snakefile runs its own src/ (tests running beside
    this one, pytest-xdist, never see it). The copy's config/claims.yaml is another path, an
    input whose change reruns the claims job: the dry run leaves the input trigger out, so
    that what it plans is what the code fingerprints (a param) decide."""
    copy = copy_of_repo(tmp_path / "copy")
    with open(copy / "src" / "matcond" / "jobs" / "plot.py", "a") as script:
        script.write("# an edit\n")
    triggers = ("--rerun-triggers", "params", "software-env")
    jobs = planned_jobs(finished, small_config, *triggers, snakefile=copy / "Snakefile")
    assert {rule for rule, _ in jobs} == {"plot", "all"}
    assert len(jobs) == len(DRAWN) + 1


def test_no_figure_has_a_layout_problem(finished):
    """matcond.figures.layout.layout_problems, run by every plot job: no overlapping texts, no
    legend over data, no unlabelled axis (its findings go to the plot's log)."""
    problems = {
        log.stem: [line for line in log.read_text().splitlines() if line.startswith("layout:")]
        for log in (finished / "results" / "logs" / "plots").glob("*.log")
    }
    assert len(problems) == len(DRAWN)
    assert {name: found for name, found in problems.items() if found} == {}


def test_every_figure_draws_without_the_papers_values(finished, tmp_path, monkeypatch):
    """A claims file with no value claims on a figure's tables (a user's own) gives the plot
    job an empty table of papers' values: every figure still draws, from the small run's
    tables. (Laid out and drawn without rendering pixels, not written: the plot jobs' own
    test writes the files, and writing PNG and PDF doubled this test's time.)"""
    import importlib

    import matplotlib.pyplot as plt

    from matcond.figures import style
    from matcond.figures.drawing import drawing, finished_tables

    drawn = {}

    def draw(fig, png, pdf):
        fig.draw_without_rendering()  # every text laid out (mathtext parsed), no pixels
        drawn[Path(png).stem] = sum(len(ax.get_children()) for ax in fig.axes if ax.get_visible())
        plt.close(fig)

    for module in {f.module for f in FIGURES.values()}:
        monkeypatch.setattr(importlib.import_module(f"matcond.figures.{module}"), "save", draw)
    monkeypatch.setattr(style, "save", draw)  # what an overview imports when it draws
    results = finished / "results"
    for name in DRAWN:
        tables = finished_tables(results, name)
        drawing(name)(tables, str(tmp_path / f"{name}.png"), str(tmp_path / f"{name}.pdf"))
        assert drawn.get(name, 0) > 10, name
