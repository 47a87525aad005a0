"""The catalog, for the tools around the core (doctor, the sweep, the matrix, upgrade-check, the CLI, scripts,
tests, examples): each patch by its id (its manifest, fix, probe and plain user program: ``manifest``, ``fix``,
``probe``, ``probe_module``, ``program``), the families it is grouped by, the open findings, the transformers
releases it was verified on, and the lines that say so.

The registry calls in here for ``PatchStatus`` and its log lines; nothing here imports the registry back. What a
manifest must say (``check``, ``FAMILIES``) is defined with the manifests, in ``_manifest``, and shown here.

The verified range is data: ``patches/verified.json``, written by ``python scripts/matrix.py sync`` from tox.ini (the
``[matrix] oldest_supported`` release and the newest env of ``env_list``), and shipped with the manifests, so an
installed package knows it without a source checkout. tests/tooling/test_matrix.py checks they agree.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from ._config import manifest_dir
from ._manifest import FAMILIES, check  # noqa: F401 - the catalog's face for them (defined with the manifest)

__all__ = ["FAMILIES", "PatchStatus", "Program", "STILL_APPLIES", "check", "fix", "folder", "judged_torch", "manifest",
           "manifests", "open_finding", "open_findings", "outside_verified", "patch_folder", "probe", "probe_module",
           "program", "summary_line", "torch_not_judged", "verified_range", "warn_if_unverified"]

FILE_NAME = "verified.json"
# Silently wrong upstream paths found and on file, not patched (doctor --sweep's and doctor's "open" verdict).
OPEN_FINDINGS = "open-findings.json"
# Every torch each release of the matrix was judged with (`python scripts/matrix.py report`, from the doctor reports).
JUDGED_TORCH = "judged-torch.json"

# What a user outside the range can still rely on, for the library's log and `hf-genfix list`.
STILL_APPLIES = ("each patch is still installed only where its affected range covers this release, but none was "
                 "checked on it: run `hf-genfix doctor` before you rely on it")


def folder(family: str) -> str:
    """The folder of a family under ``patches/`` and ``tests/``."""
    return family.replace("-", "_")


@dataclass(frozen=True)
class PatchStatus:
    """One patch as this process has it: what ``hf_genfix.status()`` returns, one per known patch.

    Fields: ``id``; ``state`` (below); ``reason`` (why, in words: for ``armed`` the modules whose import installs
    it); ``summary``; ``family``; ``targets`` (the ``module:qualname`` objects the fix wraps); ``affected`` (the
    transformers releases with the defect); ``fixed_upstream``; ``transformers_version`` (None while transformers
    is not imported); ``toggle`` (auto / on / off, from ``HF_GENFIX_<ID>``); ``calls_seen`` and ``calls_changed``
    (calls through the patch, and those it changed, while recording was on: ``hf_genfix.recording()``).

    States, and what each means for your outputs:

    - ``applied``: this release has the defect and the fix is installed: calls reach the corrected code.
    - ``armed``: this release has the defect and the fix will be installed when the module named in ``reason`` is
      imported, as that import completes, before any of its code can be called; until then nothing is changed.
      (Should the module then lack what the fix needs, the state becomes ``drift``, with a warning.)
    - ``pending``: not decided yet: transformers is not imported. Nothing is changed.
    - ``not-needed``: this release is outside the affected range: nothing is installed, upstream is right here.
    - ``forced``: installed outside its range by ``HF_GENFIX_<ID>=on`` or ``hf_genfix.forced()``.
    - ``disabled``: switched off (``HF_GENFIX=off``, ``HF_GENFIX_<ID>=off``, ``revert()``, inside ``disabled()``):
      you get upstream's outputs, defect included.
    - ``drift``: the installed transformers lacks what the fix needs: not installed (one ``HFGenfixWarning``);
      upstream's outputs, defect included.
    - ``failed``: the fix raised while installing and was rolled back (one ``HFGenfixWarning``); upstream's outputs.
    """

    id: str
    state: str
    reason: str
    summary: str
    family: str
    targets: tuple[str, ...]
    affected: str
    fixed_upstream: Mapping[str, Any]  # version: a release or a list of them (see _manifest)
    transformers_version: str | None
    toggle: str
    calls_seen: int = 0  # calls through the patch while recording was on (hf_genfix.recording(), LOG=debug)
    calls_changed: int = 0  # of those, the calls the patch changed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["targets"] = list(self.targets)
        d["fixed_upstream"] = dict(self.fixed_upstream)
        return d


def open_findings() -> list[dict[str, Any]]:
    """The records of patches/open-findings.json: scenario and arch (globs of scenario names and of model types),
    affected (a version specifier), what (the defect as far as it is known), found (where and how much)."""
    path = os.path.join(manifest_dir(), OPEN_FINDINGS)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return json.load(f)["findings"]


def open_finding(scenario: str, model_type: str, version: str | None) -> dict[str, Any] | None:
    """The open-finding record that covers ``scenario`` on ``model_type`` (a glob: ``*`` for a claim that names no
    model type) on this release, if one does."""
    import fnmatch

    from ._manifest import in_range

    for record in open_findings():
        if fnmatch.fnmatchcase(scenario, record["scenario"]) and fnmatch.fnmatchcase(model_type, record["arch"]) and \
                version is not None and in_range(record["affected"], version):
            return record
    return None


def open_finding_for_claims(claims: tuple[str, ...], version: str | None) -> dict[str, Any] | None:
    """The open finding that covers one of a manifest's ``sweep`` claims (``scenario/model-type``) on this
    release: what doctor reports where a probe shows its defect outside the patch's range, on a release where
    that path is on file as wrong for another reason."""
    for claim in claims:
        scenario, _, arch = claim.partition("/")
        record = open_finding(scenario, arch or "*", version)
        if record is not None:
            return record
    return None


def verified_range() -> tuple[str, str] | None:
    """(oldest, newest) verified release; None when the data file is missing (a broken install)."""
    try:
        with open(os.path.join(manifest_dir(), FILE_NAME), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return str(data["oldest"]), str(data["newest"])


def judged_torch(version: str) -> list[str] | None:
    """The torch versions transformers ``version`` was judged with by the matrix (``2.13.0+cpu``, ...); None when
    the matrix has no column for that release or the data file is missing."""
    try:
        with open(os.path.join(manifest_dir(), JUDGED_TORCH), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    found = data.get("releases", {}).get(version)
    return [str(t) for t in found] if found else None


def torch_not_judged(version: str, torch_version: str | None) -> str | None:
    """The line for a ``torch_version`` other than every torch the matrix judged transformers ``version`` with, else
    None (also when the matrix has no column for ``version``: ``outside_verified`` or the patches' own checks say
    that). Builds of one release count as one (``2.5.1+cu124`` and ``2.5.1+cpu``): the probes run on the CPU."""
    from packaging.version import InvalidVersion, Version

    judged = judged_torch(version)
    if not judged or not torch_version:
        return None
    try:
        mine = Version(Version(torch_version).base_version)
        if any(Version(Version(t).base_version) == mine for t in judged):
            return None
    except InvalidVersion:
        pass
    return (f"torch {torch_version} is none of the torch versions the matrix judged transformers {version} with "
            f"({', '.join(judged)}): a probe's verdict can change with torch: run `hf-genfix doctor` with your "
            f"torch")


def outside_verified(version: str | None, still: str = STILL_APPLIES) -> str | None:
    """The line for a transformers ``version`` outside the verified range (older, or newer than the newest
    verified release), else None. Pre-releases, dev and local builds count as their release, as in the registry;
    a version that is not PEP 440 is the registry's own warning."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version) if version is not None else None
    except InvalidVersion:
        parsed = None
    bounds = verified_range()
    if parsed is None or bounds is None:
        return None

    oldest, newest = bounds
    if Version(oldest) <= Version(parsed.base_version) <= Version(newest):
        return None
    return f"transformers {version} is outside the range hf_genfix has verified ({oldest}\u2013{newest}): {still}"


def warn_if_unverified(version: str) -> None:
    """The registry's one warning line, once per version, when transformers ``version`` is outside the range."""
    unverified = outside_verified(version)
    if unverified:
        # `hf-genfix list` and `doctor` print this line themselves and drop the record (by this mark).
        logging.getLogger("hf_genfix").warning("hf_genfix: %s", unverified, extra={"hf_genfix_unverified": version})


def summary_line(version: str, states: list[str]) -> str:
    """``HF_GENFIX_LOG=info``: the one line per process, once transformers is imported, from each patch's state."""
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    fixing = sum(counts.pop(state, 0) for state in ("applied", "armed", "forced"))
    rest = "".join(f", {n} {state}" for state, n in sorted(counts.items()))
    return (f"hf_genfix on transformers {version}: {fixing} patches fix defects of this release (each installed as "
            f"its module is imported){rest}; `hf-genfix list` names them")


# -- the patches: what the tools around the core (doctor, the sweep, the matrix, upgrade-check, the tests, the
# examples) ask for a patch by its id, never by its module's name ---------------------------------------------------
def manifests() -> list[Any]:
    """Every shipped patch's ``Manifest``, in the order the registry decides and stacks them in."""
    return list(_shipped())


@functools.lru_cache(maxsize=None)
def _shipped() -> tuple[Any, ...]:
    # Read once per process: the shipped manifests do not change under a running program (doctor asks for each
    # patch's program, probe and fix by id, 93 times each).
    from ._manifest import load_dir

    return tuple(load_dir())


def manifest(patch: Any) -> Any:
    """The ``Manifest`` of a patch (its id, or the manifest itself); ``KeyError`` for an unknown id."""
    if not isinstance(patch, str):
        return patch
    for m in _shipped():
        if m.id == patch:
            return m
    raise KeyError(f"no hf_genfix patch {patch!r}")


def patch_folder(patch: Any) -> Path:
    """The folder of a patch: ``patches/<family>/<id>/`` (manifest.toml, fix.py, probe.py, program.py, its test)."""
    m = manifest(patch)
    return Path(manifest_dir()) / folder(m.family) / m.id.replace("-", "_")


def fix(patch: Any) -> Any:
    """The module of a patch's fix, its ``fix.py`` (``install(patcher)`` and the wrappers it installs)."""
    import importlib

    return importlib.import_module(manifest(patch).fix.partition(":")[0])


def probe_module(patch: Any) -> Any:
    """The module of a patch's probe, its ``probe.py``."""
    import importlib

    return importlib.import_module(manifest(patch).probe.partition(":")[0])


def probe(patch: Any) -> Any:
    """A patch's probe: returns figures where the behaviour is right, raises ``DefectObserved`` where the defect
    shows, ``ProbeSkipped`` where this release cannot run it (docs/writing-a-patch.md)."""
    from ._manifest import load_object

    return load_object(manifest(patch).probe)


@dataclass(frozen=True)
class Program:
    """A patch's plain user program (its ``program.py``): ``imports``, the top level a user's program meeting the
    defect runs (``hf-genfix doctor`` runs it in a fresh interpreter: it decides whether the patch is installed
    there); ``source``, the whole file, whose ``run(repo, applied)`` is what that program does (the patch's test
    runs it); ``path``, relative to the catalog (``padding/pad_token/program.py``)."""

    patch: str
    path: str
    imports: str
    source: str


def program(patch: Any) -> Program | None:
    """A patch's plain user program; None where its folder has none (a broken install)."""
    import ast

    m = manifest(patch)
    where = patch_folder(m) / "program.py"
    try:
        source = where.read_text(encoding="utf-8")
    except OSError:
        return None
    tree = ast.parse(source)
    top = [node for i, node in enumerate(tree.body)
           if not (isinstance(node, ast.FunctionDef) and node.name == "run")
           and not (i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    return Program(patch=m.id, path=str(where.relative_to(manifest_dir())).replace(os.sep, "/"),
                   imports="\n".join(ast.get_source_segment(source, node) or "" for node in top), source=source)
