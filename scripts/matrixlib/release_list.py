"""The release list: derived from the manifests' boundaries over the published releases, written into tox.ini,
the CI workflow, the verified range and docs/matrix.md (``sync``)."""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from .files import (
    DOC_END,
    DOC_START,
    ENV_PREFIX,
    MATRIX_DOC,
    PUBLISHED,
    ROOT,
    TOX_INI,
    VERIFIED,
    WORKFLOW,
)


def expand(item: str) -> list[str]:
    """tox's generative names: ``tf-{1.0,2.0}`` -> ``tf-1.0``, ``tf-2.0`` (one brace group is all we use)."""
    match = re.search(r"\{([^{}]*)\}", item)
    if not match:
        return [item]
    head, tail = item[: match.start()], item[match.end():]
    return [out for part in match.group(1).split(",") for out in expand(head + part.strip() + tail)]


def env_names(tox_ini: Path = TOX_INI) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    raw = parser.get("tox", "env_list", fallback="")
    items = [i.strip() for line in raw.splitlines() for i in _split_top(line) if i.strip()]
    return [name for item in items for name in expand(item)]


def _split_top(line: str) -> list[str]:
    """Split on commas outside braces."""
    parts, depth, current = [], 0, ""
    for ch in line:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def releases(tox_ini: Path = TOX_INI) -> list[str]:
    """The transformers releases of the matrix, in tox.ini's order (oldest first)."""
    return [name[len(ENV_PREFIX):] for name in env_names(tox_ini) if name.startswith(ENV_PREFIX)]


def published(path: Path = PUBLISHED) -> list[str]:
    """The final transformers releases on the package index, oldest first (a snapshot: ``matrix.py refresh``)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return sorted((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), key=release_key)


def matrix_settings(tox_ini: Path = TOX_INI) -> dict[str, Any]:
    """tox.ini's ``[matrix]`` section: the oldest supported release and the releases that run the test suite."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    return {"oldest_supported": parser.get("matrix", "oldest_supported", fallback="4.40.2").strip(),
            "suite": parser.get("matrix", "suite", fallback="").split()}


def boundary_pairs(specifier: str, versions: Sequence[str]) -> list[tuple[str, str]]:
    """Adjacent releases on which ``specifier`` decides differently: the two sides of each of its boundaries."""
    inside = [in_range(specifier, v) for v in versions]
    return [(versions[i], versions[i + 1]) for i in range(len(versions) - 1) if inside[i] != inside[i + 1]]


def boundaries(manifests: Sequence[Any], versions: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    return {m.id: boundary_pairs(m.affected, versions) for m in manifests}


def derived_releases(manifests: Sequence[Any], versions: Sequence[str], oldest: str) -> list[str]:
    """Both sides of every boundary of every manifest, the oldest supported and the newest release."""
    from packaging.version import Version

    supported = [v for v in versions if Version(v) >= Version(oldest)]
    picks = {supported[0], supported[-1]}
    for pairs in boundaries(manifests, supported).values():
        picks.update(v for pair in pairs for v in pair)
    return sorted(picks, key=release_key)


def catalog_manifests(patches_dir: Path | None = None) -> list[Any]:
    from hf_genfix._manifest import load_dir

    return load_dir(patches_dir or ROOT / "patches")


def wanted_releases(tox_ini: Path = TOX_INI, patches_dir: Path | None = None,
                    published_file: Path = PUBLISHED) -> list[str]:
    return derived_releases(catalog_manifests(patches_dir), published(published_file),
                            matrix_settings(tox_ini)["oldest_supported"])


def suite_releases(tox_ini: Path = TOX_INI) -> list[str]:
    """The releases that run the whole test suite: the oldest and newest of the list and [matrix] suite."""
    listed = sorted(releases(tox_ini), key=release_key)
    picks = [listed[0], *matrix_settings(tox_ini)["suite"], listed[-1]]
    return sorted(dict.fromkeys(v for v in picks if v in listed), key=release_key)


def ci_envs(tox_ini: Path = TOX_INI) -> list[str]:
    """The oldest, a middle and the newest suite release: what a quick CI run covers."""
    ordered = suite_releases(tox_ini)
    # The lower middle when the count is even: the newest release joins the suite on the day it is published, and
    # the middle should not move with it (5.25.0 made 5.24.0, the previous newest, a suite release of its own).
    picks = [ordered[0], ordered[(len(ordered) - 1) // 2], ordered[-1]]
    return [ENV_PREFIX + v for v in dict.fromkeys(picks)]


def verified_text(versions: Sequence[str]) -> str:
    """patches/verified.json: the oldest and newest release of the matrix, the range hf_genfix calls verified."""
    ordered = sorted(versions, key=release_key)
    return json.dumps({"generated_by": "python scripts/matrix.py sync (from tox.ini)", "oldest": ordered[0],
                       "newest": ordered[-1], "releases": len(ordered)}, indent=2) + "\n"


def matrix_doc_text(text: str, versions: Sequence[str]) -> str:
    """docs/matrix.md with its figures about the release list (count, first and last env) from ``versions``."""
    ordered = sorted(versions, key=release_key)
    block = (f"`tox.ini` has one env per release: {len(ordered)} releases, `{ENV_PREFIX}{ordered[0]}` ... "
             f"`{ENV_PREFIX}{ordered[-1]}`, the range `hf-genfix list` and\n`hf-genfix doctor` call verified "
             f"(`patches/verified.json`).")
    head, _, rest = text.partition(DOC_START)
    _, _, tail = rest.partition(DOC_END)
    return f"{head}{DOC_START}\n{block}\n{DOC_END}{tail}" if DOC_START in text else text


def sync(check_only: bool = False, tox_ini: Path = TOX_INI, workflow_path: Path | None = None,
         verified_path: Path = VERIFIED, matrix_doc: Path = MATRIX_DOC) -> int:
    """Write the derived release list into tox.ini's env_list and the verified range into patches/verified.json
    (and regenerate the workflow)."""
    wanted = wanted_releases(tox_ini)
    text = Path(tox_ini).read_text(encoding="utf-8")
    line = "    " + ENV_PREFIX + "{" + ",".join(wanted) + "}"
    updated = re.sub(r"(?m)^    " + re.escape(ENV_PREFIX) + r"\{[^}]*\}$", line, text, count=1)
    verified = verified_text(wanted)
    doc = Path(matrix_doc).read_text(encoding="utf-8") if Path(matrix_doc).is_file() else ""
    doc_wanted = matrix_doc_text(doc, wanted)
    if check_only:
        if updated != text:
            print(f"matrix: tox.ini's env_list is not the list the manifests need: run python scripts/matrix.py "
                  f"sync\n  now:    {releases(tox_ini)}\n  wanted: {wanted}")
            return 1
        if not Path(verified_path).is_file() or Path(verified_path).read_text(encoding="utf-8") != verified:
            print(f"matrix: {Path(verified_path).name} does not hold tox.ini's range: run python scripts/matrix.py "
                  f"sync")
            return 1
        if doc != doc_wanted:
            print(f"matrix: {Path(matrix_doc).name}'s release figures are not tox.ini's: run python scripts/matrix.py "
                  f"sync")
            return 1
        return workflow(check_only=True, path=workflow_path or WORKFLOW)
    Path(tox_ini).write_text(updated, encoding="utf-8")
    Path(verified_path).write_text(verified, encoding="utf-8")
    if doc:
        Path(matrix_doc).write_text(doc_wanted, encoding="utf-8")
    print(f"matrix: tox.ini lists {len(wanted)} releases; {Path(verified_path).name}: {wanted[0]} to {wanted[-1]}")
    return workflow(path=workflow_path or WORKFLOW)


def refresh(path: Path = PUBLISHED) -> int:
    """Re-read the published final releases (>= 4.40.0) with ``pip index versions transformers``."""
    from datetime import date

    from packaging.version import Version

    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "transformers"],
                         capture_output=True, text=True)
    match = re.search(r"Available versions:(.*)", out.stdout)
    if out.returncode or not match:
        print(f"matrix: pip index versions failed: {out.stderr.strip()[-500:]}")
        return 2
    found = [v.strip() for v in match.group(1).split(",")]
    keep = sorted((v for v in found if not Version(v).is_prerelease and Version(v) >= Version("4.40.0")),
                  key=release_key)
    Path(path).write_text("# transformers releases on PyPI (final releases >= 4.40.0), oldest first.\n"
                          f"# Refreshed by: python scripts/matrix.py refresh  ({date.today()})\n"
                          + "\n".join(keep) + "\n", encoding="utf-8")
    print(f"matrix: {len(keep)} releases, newest {keep[-1]} -> {path}")
    return 0


def release_key(version: str) -> tuple:
    from packaging.version import Version

    return (Version(version),)


# The torch axis: ``tf-4.46.3-torch2.5.1`` is transformers 4.46.3 judged with torch 2.5.1 (the torch of its time)
# instead of the default one (TORCH_DEFAULT, or GENFIX_TORCH).
_TORCH_SUFFIX = re.compile(r"^(?P<release>.+)-torch(?P<torch>\d+(\.\d+)*)$")


def split_env(spec: str) -> tuple[str, str | None]:
    """``tf-4.46.3-torch2.5.1`` -> (``4.46.3``, ``2.5.1``); ``tf-5.12.0`` or ``5.12.0`` -> (``5.12.0``, None)."""
    spec = spec[len(ENV_PREFIX):] if spec.startswith(ENV_PREFIX) else spec
    match = _TORCH_SUFFIX.match(spec)
    return (match["release"], match["torch"]) if match else (spec, None)


def eras(tox_ini: Path = TOX_INI) -> list[str]:
    """tox.ini's ``eras`` label (``tox -m eras``): the envs that judge a release with the torch of its time."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    for line in parser.get("tox", "labels", fallback="").splitlines():
        name, _, envs = line.partition("=")
        if name.strip() == "eras":
            return [e.strip() for e in envs.split(",") if e.strip()]
    return []


def workflow_text(versions: Sequence[str]) -> str:
    # Action majors that run on node24: node20 was removed from GitHub's runners on 2026-09-23 (actionlint,
    # run by tests/tooling/test_matrix.py, rejects the older ones).
    matrix = ", ".join(f'"{v}"' for v in versions)
    return f"""\
# Generated by `python scripts/matrix.py workflow` from the env_list in tox.ini. Do not edit by hand:
# change tox.ini and regenerate (tests/tooling/test_matrix.py fails when this file is stale).
name: matrix
on:
  push:
  pull_request:
  workflow_dispatch:
jobs:
  release:
    name: transformers ${{{{ matrix.release }}}}
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false
      matrix:
        release: [{matrix}]
    env:
      # A CPU build of torch: PyTorch's CPU wheel index keeps pip from fetching a CUDA build.
      GENFIX_TORCH: "torch==2.13.0"
      PIP_EXTRA_INDEX_URL: "https://download.pytorch.org/whl/cpu"
    steps:
      - uses: actions/checkout@v6
      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"
      - run: python -m pip install "tox>=4.20"
      - run: tox -e {ENV_PREFIX}${{{{ matrix.release }}}}
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: doctor-${{{{ matrix.release }}}}
          path: tox-results/{ENV_PREFIX}${{{{ matrix.release }}}}.json
  report:
    needs: release
    if: always()
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v6
      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"
      - uses: actions/download-artifact@v7
        with:
          path: tox-results
          merge-multiple: true
      - run: python -m pip install "tox>=4.20"
      - run: tox -e report
      - run: git diff --exit-code docs/compat-matrix.md
"""


def workflow(check_only: bool = False, path: Path = WORKFLOW) -> int:
    text = workflow_text(releases())
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if check_only:
        if current != text:
            print(f"matrix: {path} is stale: run python scripts/matrix.py workflow")
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"matrix: wrote {path} ({len(releases())} releases)")
    return 0


def in_range(specifier: str, version: str) -> bool:
    from hf_genfix._registry import in_range as gate

    return gate(specifier, version)
