"""The catalog, for the tools around it (doctor, the CLI, scripts, tests): what a manifest must say, the families
it is grouped by, the transformers releases it was verified on, and the lines that say so.

The core (``_registry``, ``_manifest``) calls in here lazily; nothing here imports the core back but ``_config``
and ``_errors``.

The verified range is data: ``patches/verified.json``, written by ``python scripts/matrix.py sync`` from tox.ini (the
``[matrix] oldest_supported`` release and the newest env of ``env_list``), and shipped with the manifests, so an
installed package knows it without a source checkout. tests/tooling/test_matrix.py checks they agree.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from ._config import RESERVED, manifest_dir
from ._errors import ManifestError
from .fixes import FAMILIES

__all__ = ["FAMILIES", "PatchStatus", "STILL_APPLIES", "check", "judged_torch", "open_finding", "open_findings",
           "outside_verified", "summary_line", "torch_not_judged", "verified_range", "warn_if_unverified"]

FILE_NAME = "verified.json"
# Silently wrong upstream paths found and on file, not patched (doctor --sweep's and doctor's "open" verdict).
OPEN_FINDINGS = "open-findings.json"
# Every torch each release of the matrix was judged with (`python scripts/matrix.py report`, from the doctor reports).
JUDGED_TORCH = "judged-torch.json"

# What a user outside the range can still rely on, for the library's log and `hf-genfix list`.
STILL_APPLIES = ("each patch is still installed only where its affected range covers this release, but none was "
                 "checked on it: run `hf-genfix doctor` before you rely on it")


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

    from ._registry import in_range

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


# -- manifests ----------------------------------------------------------------------------------------------------
_REQUIRED = ("id", "summary", "family", "targets", "affected", "fix", "probe", "evidence")
_OPTIONAL = ("fixed_upstream", "sweep")
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_CLAIM = re.compile(r"^[a-z0-9][\w-]*(/[\w*?\[\]-]+)?$")  # "scenario" or "scenario/model-type-glob"


def check(data: Mapping[str, object], where: str = "<manifest>") -> None:
    """Raise ``ManifestError`` where a manifest's table does not follow docs/writing-a-patch.md."""

    def fail(msg: str) -> ManifestError:
        return ManifestError(f"{where}: {msg}")

    unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise fail(f"unknown key(s) {unknown}; allowed: {sorted(_REQUIRED + _OPTIONAL)}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise fail(f"missing key(s) {missing}")
    pid = data["id"]
    if not isinstance(pid, str) or not _ID.match(pid):
        raise fail(f"id {pid!r} is not kebab-case")
    if pid.upper().replace("-", "_") in RESERVED:
        raise fail(f"id {pid!r} collides with the setting HF_GENFIX_{pid.upper()}")
    if where.endswith(".toml") and Path(where).stem != pid:
        raise fail(f"id {pid!r} does not match the file name")
    for key in ("summary", "affected", "fix", "probe"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise fail(f"{key} must be a non-empty string")
    if data["family"] not in (*FAMILIES, "test"):
        raise fail(f"family {data['family']!r} is not one of {tuple(FAMILIES)}")
    targets = data["targets"]
    if not isinstance(targets, list) or not targets or not all(
        isinstance(t, str) and _TARGET.match(t) for t in targets
    ):
        raise fail("targets must be a non-empty list of 'module:Qualified.name' strings")
    for key in ("fix", "probe"):
        if not _CALLABLE.match(data[key]):
            raise fail(f"{key} {data[key]!r} is not 'module:function'")
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(data["affected"])
    except InvalidSpecifier as exc:
        raise fail(f"affected {data['affected']!r} is not a PEP 440 specifier: {exc}") from exc
    evidence = data["evidence"]
    if not isinstance(evidence, dict) or not {"scenario", "observed"} <= set(evidence):
        raise fail("evidence must be a table with at least 'scenario' and 'observed'")
    if not all(isinstance(v, str) and v.strip() for v in evidence.values()):
        raise fail("evidence values must be non-empty strings")
    fixed = data.get("fixed_upstream", {})
    _check_fixed(fixed, fail)
    claims = data.get("sweep", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) and _CLAIM.match(c) for c in claims):
        raise fail("sweep must be a list of 'scenario' or 'scenario/model-type-glob' strings")


def _check_fixed(fixed: object, fail) -> None:
    """``[fixed_upstream]``: ``version`` is a release, or a list of releases (one per cause) explained in
    ``reason``; ``ref`` and ``reason`` are text. Tools compare these versions, so free text there breaks them."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(fixed, dict) or (fixed and "version" not in fixed):
        raise fail("fixed_upstream must be a table with 'version' (and 'ref')")
    unknown = sorted(set(fixed) - {"version", "ref", "reason"})
    if unknown:
        raise fail(f"fixed_upstream: unknown key(s) {unknown}; allowed: ['reason', 'ref', 'version']")
    for key in ("ref", "reason"):
        if key in fixed and (not isinstance(fixed[key], str) or not fixed[key].strip()):
            raise fail(f"fixed_upstream.{key} must be a non-empty string")
    version = fixed.get("version")
    versions = version if isinstance(version, list) else [version]
    if version is not None and (not versions or not all(isinstance(v, str) for v in versions)):
        raise fail("fixed_upstream.version must be a version string or a non-empty list of them")
    for v in versions if version is not None else []:
        try:
            Version(v)
        except InvalidVersion:
            raise fail(f"fixed_upstream.version {v!r} is not a PEP 440 version (put the explanation in "
                       "fixed_upstream.reason)") from None
    if isinstance(version, list):
        if [Version(v) for v in versions] != sorted(Version(v) for v in versions):
            raise fail("fixed_upstream.version: list the releases oldest first")
        if "reason" not in fixed:
            raise fail("fixed_upstream.version lists several releases: say which fixes what in "
                       "fixed_upstream.reason")
