"""smdissect: build, SASS-check, time, profile, parse, cross-validate and report GPU microbenchmarks."""

import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

from snakemake.settings.types import DeploymentMethod

ROOT = Path(workflow.basedir)
sys.path.insert(0, str(ROOT / "workflow"))

from smdissect.core import config as smd_config
from smdissect.stages import plan as smd_plan
from smdissect.core.errors import SmdissectError

try:
    smd_config.check_yaml(ROOT / "config" / "config.yaml")
except SmdissectError as err:
    sys.exit(f"smdissect: {err}")


configfile: "config/config.yaml"


try:
    PLAN = smd_plan.make(config, ROOT)
except SmdissectError as err:
    sys.exit(f"smdissect: {err}")
smd_plan.announce(PLAN)

# Jobs run `smdissect <stage>`: this package (the one in workflow/ first) under the interpreter running this workflow
# (a venv's works unactivated), or the conda env's python with --software-deployment-method conda.
PYTHON = "python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method else sys.executable
shell.prefix(
    f"export PYTHONPATH={ROOT / 'workflow'}:${{{{PYTHONPATH:-}}}}; "
    f'smdissect() ( exec {shlex.quote(PYTHON)} -m smdissect "$@" ); '
)
S = PLAN.settings
GPUS = PLAN.folders  # results/<gpu>/ folders: one, or one per GPU with device: all or per cluster GPU model
HEADERS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kernels" / "common").glob("*.cuh"))


wildcard_constraints:
    arch="sm_[0-9]+[af]?",
    category="|".join(PLAN.families),  # configured categories only (so never "index")
    family="[a-z][a-z0-9_]*",
    gpu="[a-z0-9][a-z0-9_-]*",
    a="[a-z0-9][a-z0-9_-]*?",
    b="[a-z0-9][a-z0-9_-]*",


include: "rules/common.smk"
include: "rules/build.smk"
include: "rules/sass.smk"
include: "rules/run.smk"
include: "rules/profile.smk"
include: "rules/parse.smk"
include: "rules/crossval.smk"
include: "rules/figures.smk"
include: "rules/report.smk"


rule all:
    input:
        expand("reports/{gpu}/index.html", gpu=GPUS),
        expand("reports/{gpu}/compare-paper.html", gpu=PLAN.arch_of),
        expand("reports/{gpu}/gpgpusim-diff.html", gpu=PLAN.arch_of),
        expand("reports/{gpu}/{category}.html", gpu=GPUS, category=PLAN.families),
        ["reports/gpus.html"] + [f"reports/compare/{GPUS[0]}-vs-{g}.html" for g in GPUS[1:]] if len(GPUS) > 1 else [],


# Every table and no page: what a GPU machine without a browser engine runs (the pages come later, from a plain
# `snakemake` where the tables land, or from .ci/device-reports).
rule tables:
    input:
        [p for g in GPUS for c in PLAN.families for ps in report_inputs(SimpleNamespace(gpu=g, category=c)).values() for p in ps],


for _category in PLAN.families:

    rule:
        name:
            _category
        input:
            expand("reports/{gpu}/{category}.html", gpu=GPUS, category=_category),
