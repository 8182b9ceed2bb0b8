"""Load and validate the run configuration against config/schema.yaml, filling its defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import SmdissectError

# libyaml's loader where PyYAML has it: the manifests are parsed on every snakemake start (the no-change rerun)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Safe-load YAML text (plain data only), with libyaml when available."""
    return yaml.load(text, Loader=_LOADER)


def validate(config: dict[str, Any], schema_path: Path) -> dict[str, Any]:
    """Return `config` with defaults filled; a bad value is a one-line error naming the key."""
    if not isinstance(config, dict):
        raise SmdissectError("config is not a mapping of keys to values: fix config/config.yaml")
    schema = load_yaml(schema_path.read_text())
    filled = {k: v["default"] for k, v in schema["properties"].items() if "default" in v} | config
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(filled))
    if error is not None:
        where = "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)
        raise SmdissectError(f"config{where}: {error.message} (fix config/config.yaml or --config)")
    return filled


def check_yaml(path: Path) -> None:
    """Fail with one line (file, line, column, problem) if `path` is not valid YAML."""
    try:
        load_yaml(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SmdissectError(f"{path} is not valid YAML{where}: {problem}") from err
