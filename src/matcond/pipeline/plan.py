"""What a run makes, from its validated config: the trials of every experiment and the blocks
that train them, which trials save their weights, the Gauss-Newton parts (sweeps, and the
bounds on saved weights), the depth formula's trials, the figures drawn, and every target.

The Snakefile builds one :class:`Plan` at parse time (light imports only) and the rules read
it; the tests build it from a config without Snakemake.
"""

from __future__ import annotations

import functools
import json

from matcond.claims.check import DEPTH_TABLE
from matcond.condition_number.batching import block_device, block_mem_mb, block_seconds
from matcond.core.config import ConfigError
from matcond.core.trials import Block, Trial, blocks_of, bundle_request, bundles_of, seeds_by_cell
from matcond.figures.captions import experiment_summary
from matcond.figures.catalog import FIGURES
from matcond.figures.overview import PREFIX, entry

DIVERGED_TABLE = "results/tables/diverged_trials.csv"
# Seconds of one CPU thread per training job under a cluster executor (SLURM) where config
# key train_job_seconds is unset: a SLURM job's own start and each job's Snakemake (about
# 9 s and 2 s, docs/benchmarks.md "SLURM") stay a small share of its training.
CLUSTER_TRAIN_JOB_SECONDS = 30
CLAIMS_TABLE = "results/claims.csv"
# The depth formula's per-trial table, in the per-trial tables' layout (claims name it
# DEPTH_TABLE, as an experiment).
DEPTH_PER_TRIAL = f"results/per_trial/{DEPTH_TABLE}.parquet"
REPORT = "results/report.html"  # where the README's command writes the report
DEPTH_MODELS = ("linear", "deep_linear", "relu_mlp")  # chains of matrices
CHECKPOINT_SUFFIXES = (".parquet", ".csv", "_skipped.csv", "_spectra.png", "_spectra.pdf")
CHECKPOINT_SUFFIXES += ("_layers.png", "_layers.pdf", "_errors.parquet", "_errors.csv")


def gn_mem_mb(dim: int) -> int:
    """MB a GN job on a trial's weights of dimension ``dim`` needs (dense forms of side
    dim^2, a few float64 copies, plus torch)."""
    return 1500 + 40 * dim**4 // 1_000_000


class Plan:
    """The run of ``config`` (validated, defaults filled) whose experiments have ``trials``
    (:func:`matcond.core.trials.all_trials`). Raises ConfigError, naming the key, where
    the config asks for something the run cannot make."""

    def __init__(
        self, config: dict, trials: dict[str, list[Trial]], gpus: int = 0, cluster: bool = False
    ):
        self.config, self.trials = config, trials
        self.gpus = gpus  # GPUs torch sees in the Snakemake process (for device: auto)
        # Seconds of training per training job (config key train_job_seconds; unset: bundles
        # of CLUSTER_TRAIN_JOB_SECONDS where jobs go to a cluster, one job per block locally)
        seconds = config["train_job_seconds"]
        self.train_job_seconds = (
            (CLUSTER_TRAIN_JOB_SECONDS if cluster else 0) if seconds is None else seconds
        )
        gn = self.config["gauss_newton"]
        self.trial_by_path = {t.path: t for ts in self.trials.values() for t in ts}
        # The experiments the theory table covers (config key theory.experiments) that run.
        self.theory_experiments = [
            e for e in self.config["theory"]["experiments"] if e in self.trials
        ]
        # The GN parts on saved weights: exp7 (initial and final), along_training (every
        # recorded epoch), each on its experiment's trials of the exp7 models.
        self.gn_trial_stages = {"exp7": gn["exp7"]["stages"], "along_training": ["recorded"]}
        self.gn_trials = {
            part: [
                t
                for t in self.trials.get(gn[part]["experiment"], [])
                if t.spec["model"] in gn["exp7"]["models"]
            ]
            for part in self.gn_trial_stages
        }
        if any(not t.spec["save_recorded_weights"] for t in self.gn_trials["along_training"]):
            raise ConfigError(
                f"config key experiments.{gn['along_training']['experiment']}: "
                "gauss_newton.along_training needs its trials to save their weights "
                "(setting save_recorded_weights: true)"
            )
        self.gn_parts = [*gn["sweeps"], *(p for p, ts in self.gn_trials.items() if ts)]
        if DEPTH_TABLE in self.trials:
            raise ConfigError(
                f"config key experiments.{DEPTH_TABLE}: the name of the depth formula's table "
                "(rule depth_theory); give the experiment another name"
            )
        # The trials the depth formula is checked on (config key depth_theory.experiments),
        # each once though several of its experiments ask for it.
        self.depth_experiments = [
            e for e in self.config["depth_theory"]["experiments"] if e in self.trials
        ]
        self.depth_trials = list(
            {
                t.path: t
                for e in self.depth_experiments
                for t in self.trials[e]
                if t.spec["model"] in DEPTH_MODELS
            }.values()
        )
        # Training jobs: blocks of config key block_size seeds per setting.
        self.blocks = {
            b.path: b for b in blocks_of(self.trial_by_path.values(), self.config["block_size"])
        }
        self.block_of_trial = {t.path: b for b in self.blocks.values() for t in b.trials}
        # Weights are saved where something reads them (the GN parts, the depth formula,
        # save_recorded_weights), or for every trial with config key save_weights.
        self.weights_saved = {
            t.path
            for b in self.blocks.values()
            if self.config["save_weights"] or b.trials[0].spec["save_recorded_weights"]
            for t in b.trials
        } | {t.path for ts in [*self.gn_trials.values(), self.depth_trials] for t in ts}
        # The settings of each GN part as JSON: the jobs' params, and what their tables store.
        exp7 = {k: v for k, v in gn["exp7"].items() if k not in ("experiment", "models")}
        self.gn_trial_settings = {
            part: json.dumps({**exp7, "stages": stages}, sort_keys=True)
            for part, stages in self.gn_trial_stages.items()
        }
        self.gn_sweep_settings = {
            name: json.dumps({"sweep": sweep, "data": gn["data"]}, sort_keys=True)
            for name, sweep in gn["sweeps"].items()
        }
        # The figures whose experiments and GN parts are all configured (and whose derived
        # tables are made); then an overview of each experiment none of them draws, directly
        # or through the tables it feeds (the theory's, the depth formula's, a GN part's).
        self.drawn = [
            name
            for name, f in FIGURES.items()
            if set(f.experiments) <= set(self.trials)
            and set(f.gauss_newton) <= set(self.gn_parts)
            and ("theory" not in f.tables or self.theory_experiments)
            and (DEPTH_TABLE not in f.tables or self.depth_trials)
        ]
        # Each derived table (the theory's, the depth formula's, a GN part's): the
        # experiments whose trials it is made from.
        self.derived_tables = {
            "theory": self.theory_experiments,
            DEPTH_TABLE: self.depth_experiments,
        } | {part: [gn[part]["experiment"]] for part, ts in self.gn_trials.items() if ts}
        shown = {
            e
            for name in self.drawn
            for table in [*self.figure_table_names(name), *FIGURES[name].gauss_newton]
            for e in self.derived_tables.get(table, [table])
        }
        self.drawn += [PREFIX + e for e in self.trials if e not in shown]

    # -- training ---------------------------------------------------------------------------

    @functools.cached_property
    def train_jobs(self) -> dict[str, tuple[Block, ...]]:
        """The training jobs by path (below results/trials, without ``.json``), each with its
        blocks: a job per block (its path is the block's), or bundles of blocks of about
        :attr:`train_job_seconds` each (:func:`matcond.core.trials.bundles_of`), cut apart
        where blocks differ in device or priority."""
        target = self.train_job_seconds
        if not target:
            return {path: (b,) for path, b in self.blocks.items()}
        classes: dict[tuple, list[Block]] = {}
        for path, b in self.blocks.items():
            classes.setdefault((self.block_device(path), self._block_priority(b)), []).append(b)
        jobs = {}
        for blocks in classes.values():
            jobs |= bundles_of(blocks, self._block_seconds, target)
        return jobs

    @functools.cached_property
    def _job_of_block(self) -> dict[str, str]:
        return {b.path: job for job, blocks in self.train_jobs.items() for b in blocks}

    def job_blocks(self, job: str) -> tuple[Block, ...]:
        """The blocks of training job ``job``: a bundle's, or the block whose path it is (a
        job Snakemake asks a process of its own to run is found by either)."""
        return self.train_jobs[job] if job in self.train_jobs else (self.blocks[job],)

    def job_of_block(self, block: str) -> str:
        """The path of the training job that trains block ``block`` (its path)."""
        return self._job_of_block[block]

    def block_manifest(self, trial_path: str) -> str:
        """The manifest of the training job that trains the trial at results/trials/{trial_path}."""
        return f"results/trials/{self.job_of_block(self.block_of_trial[trial_path].path)}.json"

    def manifests(self) -> list[str]:
        """Every training job's manifest: the training jobs' outputs."""
        return [f"results/trials/{path}.json" for path in self.train_jobs]

    def experiment_manifests(self, experiment: str) -> list[str]:
        """The manifests of the training jobs that train an experiment's trials."""
        return sorted({self.block_manifest(t.path) for t in self.trials[experiment]})

    @functools.cache  # noqa: B019 (one plan per run; Snakemake asks again and again)
    def experiment_cells(self, experiment: str) -> dict:
        """:func:`matcond.core.trials.seeds_by_cell` of an experiment's trials."""
        return seeds_by_cell(self.trials[experiment])

    @functools.cache  # noqa: B019
    def experiment_summary(self, experiment: str) -> tuple[int, dict, list[str]]:
        """:func:`matcond.figures.captions.experiment_summary` of an experiment, once."""
        return experiment_summary(self.trials[experiment])

    def block_device(self, block: str) -> str:
        """``cpu`` or ``cuda``: where a block (its path) trains
        (:func:`matcond.condition_number.batching.block_device` of config keys device and
        gpu_min_dim)."""
        dim = self.blocks[block].trials[0].spec["dim"]
        config = self.config
        return block_device(config["device"], dim, config["gpu_min_dim"], self.gpus)

    def train_device(self, job: str) -> str:
        """``cpu`` or ``cuda``: where a training job trains (its blocks share a device)."""
        return self.block_device(self.job_blocks(job)[0].path)

    def train_request(self, job: str) -> str:
        """What a training job trains, as canonical JSON: its block's
        :meth:`matcond.core.trials.Block.request`, or a bundle's
        :func:`matcond.core.trials.bundle_request`."""
        if job in self.blocks:
            return self.blocks[job].request(self.weights_saved)
        return bundle_request(self.train_jobs[job], self.weights_saved)

    def train_mem_mb(self, job: str) -> int:
        """MB a training job needs: its largest block's trials that train side by side on its
        device (on a GPU the whole block) each keep their matrices on the host
        (:func:`matcond.condition_number.batching.block_mem_mb`)."""
        return max(self._block_mem_mb(b.path) for b in self.job_blocks(job))

    def _block_mem_mb(self, block: str) -> int:
        trials = self.blocks[block].trials
        return block_mem_mb(trials[0].spec, len(trials), self.block_device(block))

    def train_runtime(self, job: str) -> int:
        """Minutes a training job may take (generous: most trials take seconds on a CPU)."""
        work = 0
        for b in self.job_blocks(job):
            spec = b.trials[0].spec
            work += len(b.trials) * spec["epochs"] * spec["steps_per_epoch"] * spec["dim"] ** 2
        return 5 + work // 50_000_000

    def train_priority(self, job: str) -> int:
        """1 for the trials that come first (the longest jobs early, not last): those recorded
        at every epoch (their aggregation, which bootstraps every epoch, is the longest job
        after them) and those of d >= 1024 (seconds each); 0 for the rest."""
        return self._block_priority(self.job_blocks(job)[0])

    @staticmethod
    def _block_priority(block: Block) -> int:
        spec = block.trials[0].spec
        return int(spec["record_every"] == 1 or spec["dim"] >= 1024)

    @staticmethod
    def _block_seconds(block: Block) -> float:
        return block_seconds(block.trials[0].spec, len(block.trials))

    def memory_problem(self, total_mb: int) -> str | None:
        """What does not fit in ``total_mb`` of memory (the largest training job of each
        experiment, :meth:`train_mem_mb`, and the GN job on the largest trial of each GN
        part), naming the config key; None if all fits."""
        jobs = {}
        for e, ts in self.trials.items():
            need, block = max(
                (self._block_mem_mb(b), b) for b in {self.block_of_trial[t.path].path for t in ts}
            )
            dim = self.blocks[block].trials[0].spec["dim"]
            jobs[f"experiments.{e}"] = (need, dim, "training job")
        for part, ts in self.gn_trials.items():
            if ts:
                dim = max(t.spec["dim"] for t in ts)
                jobs[f"gauss_newton.{part}"] = (gn_mem_mb(dim), dim, "GN job on its weights")
        for key, (need, dim, job) in jobs.items():
            if need > total_mb:
                return (
                    f"config key {key}: dim {dim} needs about {need} MB per {job}; this "
                    f"machine has {total_mb} MB"
                )
        return None

    # -- the depth formula ------------------------------------------------------------------

    @functools.cached_property
    def depth_theory_blocks(self) -> dict[str, dict]:
        """The depth formula's trials by the block that trains them (its path below
        results/trials): the setting (``spec`` without the seed) and the ``seeds``."""
        by_block: dict[str, dict] = {}
        for t in self.depth_trials:
            cell = {k: v for k, v in t.spec.items() if k != "seed"}
            block = by_block.setdefault(
                self.block_of_trial[t.path].path, {"spec": cell, "seeds": []}
            )
            block["seeds"].append(t.seed)
        return by_block

    def depth_theory_tables(self) -> list[str]:
        """The depth formula's tables (rule depth_theory), if it has trials."""
        if not self.depth_trials:
            return []
        return [
            DEPTH_PER_TRIAL,
            "results/tables/depth_theory.parquet",
            "results/tables/depth_theory.csv",
        ]

    # -- tables, figures, targets -----------------------------------------------------------

    def per_trial_tables(self) -> list[str]:
        """Every experiment's per-trial table."""
        return [f"results/per_trial/{e}.parquet" for e in self.trials]

    def claims_tables(self) -> list[str]:
        """The per-trial tables the claims read: every experiment's, and the depth formula's."""
        return self.per_trial_tables() + ([DEPTH_PER_TRIAL] if self.depth_trials else [])

    def gn_sweep_tables(self) -> list[str]:
        """The GN sweeps' tables (claims on gn_{sweep} read them)."""
        return [f"results/tables/gn_{s}.parquet" for s in self.config["gauss_newton"]["sweeps"]]

    def gn_trial_tables(self, part: str) -> list[str]:
        """The per-trial tables of GN part ``part`` on saved weights."""
        return [f"results/gn/{part}/{t.path}.parquet" for t in self.gn_trials[part]]

    def figure_table_names(self, figure: str) -> list[str]:
        """The tables a figure draws: its experiments', the configured optional ones', and its
        derived tables."""
        f = entry(figure)
        return [*f.experiments, *(e for e in f.optional if e in self.trials), *f.tables]

    def figures_by_table(self) -> dict[str, list[str]]:
        """Per table (an experiment's, a GN part's, a derived one) the figures drawn from it,
        in the catalog's order: where a claim on that table can be seen."""
        drawn: dict[str, list[str]] = {}
        for figure in self.drawn:
            for table in self.figure_table_names(figure):
                drawn.setdefault(table, []).append(figure)
        return drawn

    def figure_tables(self, figure: str, marks: list[dict]) -> dict[str, str]:
        """The tables a figure draws, by name, the per-trial tables it reads and those from
        which it draws where a paper-sized mean of ours falls (the table and pool of each
        of its ``marks`` on a claim, where configured)."""
        tables = {n: f"results/tables/{n}.parquet" for n in self.figure_table_names(figure)}
        sampled = [m[k] for m in marks if "claim" in m for k in ("table", "pool")]
        for name in [*entry(figure).per_trial, *(n for n in sampled if n in self.trials)]:
            tables[f"{name}_per_trial"] = f"results/per_trial/{name}.parquet"
        return tables

    def figure_settings(self, figure: str) -> tuple[dict, dict]:
        """The settings a figure's caption lists: per configured experiment it draws its
        :meth:`experiment_summary`, per GN part its settings."""
        f = entry(figure)
        gn = self.config["gauss_newton"]
        summaries = {
            e: self.experiment_summary(e) for e in [*f.experiments, *f.optional] if e in self.trials
        }
        gn_settings = {p: gn[p] if p in self.gn_trials else gn["sweeps"][p] for p in f.gauss_newton}
        return summaries, gn_settings

    def targets(self) -> list[str]:
        """Every table, every figure drawn, the claims, the analyses of the configured weight
        files, and the intermediates (so that a deleted one is rebuilt by a plain rerun)."""
        tables = [f"results/tables/{e}.{x}" for e in self.trials for x in ("parquet", "csv")]
        if self.theory_experiments:
            tables += ["results/tables/theory.parquet", "results/tables/theory.csv"]
        tables += self.depth_theory_tables()
        tables += [f"results/tables/gn_{p}.{x}" for p in self.gn_parts for x in ("parquet", "csv")]
        figures = [f"results/figures/{f}.{x}" for f in self.drawn for x in ("png", "pdf")]
        analyses = [
            f"results/checkpoints/{name}{suffix}"
            for name in self.config["checkpoints"]
            for suffix in CHECKPOINT_SUFFIXES
        ]
        claims = [CLAIMS_TABLE, "results/claims.parquet", "results/claims.html"]
        claims += ["results/readings.md", DIVERGED_TABLE, "results/diverged_trials.html"]
        claims = claims if self.trials else []  # a config of GN sweeps or checkpoints only
        gn_trials = [f for part in self.gn_trials for f in self.gn_trial_tables(part)]
        return [
            *tables,
            *figures,
            *analyses,
            *claims,
            *self.manifests(),
            *self.per_trial_tables(),
            *gn_trials,
        ]

    # -- damaged outputs --------------------------------------------------------------------

    def train_requests(self) -> dict[str, str]:
        """Each training job's request (:meth:`train_request`), by path."""
        return {path: self.train_request(path) for path in self.train_jobs}

    def output_settings(self) -> dict[str, str]:
        """The settings each GN output was computed with, by path (a mismatch is damage)."""
        settings = {
            f"results/tables/gn_{name}.parquet": self.gn_sweep_settings[name]
            for name in self.config["gauss_newton"]["sweeps"]
        }
        for part in self.gn_trials:
            for path in self.gn_trial_tables(part):
                settings[path] = self.gn_trial_settings[part]
        return settings
