"""MkDocs hook: the page ``config-reference.md``, rendered at build time from the config's
JSON schema (``src/matcond/schemas/config.schema.yaml``), so that it cannot drift from it.

Every key gets a row: its dotted name (``gauss_newton.sweeps.fig2_depth.depths``; the entries
of a mapping whose keys you choose, such as ``experiments``, as ``<name>``), its type and
allowed values, its default and its description. ``$ref`` and ``allOf`` are resolved, so
``defaults.lr`` shows the setting's type from ``$defs/settings`` and its own default.
No generated copy is kept in the repository (tests/test_docs.py checks that the built page
names every key of the schema).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from mkdocs.structure.files import File, Files

SCHEMA = Path("src") / "matcond" / "schemas" / "config.schema.yaml"
PAGE = "config-reference.md"
PLACEHOLDER = "<name>"  # a key of a mapping whose keys the user chooses


def resolve(node: Any, root: dict) -> Any:
    """``node`` with its ``$ref`` (a pointer into ``root``) and ``allOf`` merged in; its own
    keys win, and properties merge key by key (a sweep's own defaults over the shared
    definition's)."""
    if not isinstance(node, dict):
        return node
    parts: list[dict] = []
    if "$ref" in node:
        target: Any = root
        for step in node["$ref"].removeprefix("#/").split("/"):
            target = target[step]
        parts.append(resolve(target, root))
    parts += [resolve(part, root) for part in node.get("allOf", [])]
    own = {k: v for k, v in node.items() if k not in ("$ref", "allOf")}
    merged: dict = {}
    for part in [*parts, own]:
        properties = {**merged.get("properties", {})}
        for key, value in part.get("properties", {}).items():
            properties[key] = {**properties.get(key, {}), **value}
        merged.update(part)
        if properties:
            merged["properties"] = properties
    return merged


def keys(node: dict, root: dict, prefix: str = "") -> list[tuple[str, dict]]:
    """Every key below ``node`` as (dotted name, resolved schema), depth first, in the
    schema's order."""
    rows = []
    for name, child in resolve(node, root).get("properties", {}).items():
        child = resolve(child, root)
        dotted = f"{prefix}{name}"
        rows.append((dotted, child))
        rows += keys(child, root, f"{dotted}.")
        extra = child.get("additionalProperties")
        if isinstance(extra, dict):
            extra = resolve(extra, root)
            rows.append((f"{dotted}.{PLACEHOLDER}", extra))
            rows += keys(extra, root, f"{dotted}.{PLACEHOLDER}.")
    return rows


def type_of(node: dict) -> str:
    """The key's type and allowed values, in words."""
    if "const" in node:
        return f"always `{node['const']}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(type_of(option) for option in node["oneOf"])
    kinds = node.get("type", "")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = []
    for kind in filter(None, kinds):
        if kind == "array" and isinstance(node.get("items"), dict):
            words.append(f"list of {type_of(node['items']) or 'values'}")
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
            value = type_of(node["additionalProperties"]) or "values"
            words.append(f"mapping of `{PLACEHOLDER}` to {value}")
        else:
            words.append(kind)
    text = " or ".join(words)
    limits = [
        f"{word} {node[key]}"
        for key, word in [
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("exclusiveMaximum", "<"),
            ("minLength", "length ≥"),
        ]
        if key in node
    ]
    if node.get("minItems"):
        limits.append(f"at least {node['minItems']} item{'s' if node['minItems'] > 1 else ''}")
    if node.get("uniqueItems"):
        limits.append("no repeats")
    if "not" in node and "multipleOf" in node["not"]:
        limits.append(f"not a multiple of {node['not']['multipleOf']}")
    return f"{text} ({', '.join(limits)})" if limits else text


def default_of(node: dict) -> str:
    """The key's default as a code span (JSON for anything but a string), or nothing."""
    if "default" not in node:
        return ""
    value = node["default"]
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`"


def description_of(node: dict) -> str:
    """The key's description on one line, with what it applies to and its path tag."""
    text = " ".join(str(node.get("description", "")).split())
    applies = node.get("x-applies-to")
    if applies:
        where = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in applies.items())
        text += f" Applies only where {where}."
    path = node.get("x-path")
    if path is False:
        text += " Not in a trial's path: a change reruns the trial in place."
    elif isinstance(path, dict):
        shown = path["tag"] if node.get("type") == "boolean" else f"{path['tag']}<value>"
        text += f" In a trial's path (level {path['part']}) as `{shown}`."
        if "neutral" in path:
            text += f" At {json.dumps(path['neutral'])} it is no part of a trial."
    pattern = (node.get("propertyNames") or {}).get("pattern")
    if pattern:
        text += f" Names match `{pattern}`."
    return text.strip()


def cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def render(schema: dict) -> str:
    """The reference page: an introduction, then one table per top-level key."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from `src/matcond/schemas/config.schema.yaml` each time the docs are built:",
        "every key of a config file, its type, its default (what a config that leaves it out",
        "gets) and what it does. Nested keys are written with dots (`defaults.lr` is `lr:`",
        f"under `defaults:`); `{PLACEHOLDER}` stands for a name you choose (an experiment,",
        "a checkpoint, a data file). How configs are combined and what reruns when:",
        "[Configuration](configuration.md).",
        "",
        cell(" ".join(str(schema.get("description", "")).split())),
        "",
    ]
    for name, node in keys(schema, schema):
        if "." in name:
            continue
        lines += [f"## `{name}`", ""]
        facts = [f"Type: {type_of(node)}."]
        if "default" in node:
            facts.append(f"Default: {default_of(node)}.")
        lines += [" ".join(facts), "", description_of(node) or "(no description)", ""]
        rows = keys(node, schema, f"{name}.")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            extra = resolve(extra, schema)
            rows += [(f"{name}.{PLACEHOLDER}", extra)]
            rows += keys(extra, schema, f"{name}.{PLACEHOLDER}.")
        if rows:
            lines += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
            lines += [
                f"| `{dotted}` | {cell(type_of(child))} | {cell(default_of(child))} "
                f"| {cell(description_of(child))} |"
                for dotted, child in rows
            ]
            lines.append("")
    return "\n".join(lines)


def on_files(files: Files, config) -> Files:
    """Add the generated page to the site's files (it exists only in the build)."""
    root = Path(config.config_file_path).parent
    schema = yaml.safe_load((root / SCHEMA).read_text())
    files.append(File.generated(config, PAGE, content=render(schema)))
    return files
