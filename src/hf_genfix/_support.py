"""The transformers releases hf_genfix has verified, and the one line that says when the installed one is not.

The range is data: ``patches/verified.json``, written by ``python scripts/matrix.py sync`` from tox.ini (the
``[matrix] oldest_supported`` release and the newest env of ``env_list``), and shipped with the manifests, so an
installed package knows it without a source checkout. tests/tooling/test_matrix.py checks they agree.
"""

from __future__ import annotations

import json
import os

FILE_NAME = "verified.json"

# What a user outside the range can still rely on, for the library's log and `hf-genfix list`.
STILL_APPLIES = ("each patch is still installed only where its affected range covers this release, but none was "
                 "checked on it: run `hf-genfix doctor` before you rely on it")


def verified_range() -> tuple[str, str] | None:
    """(oldest, newest) verified release; None when the data file is missing (a broken install)."""
    from ._activation import manifest_dir

    try:
        with open(os.path.join(manifest_dir(), FILE_NAME), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return str(data["oldest"]), str(data["newest"])


def outside_verified(version: str | None, still: str = STILL_APPLIES) -> str | None:
    """The line for a transformers ``version`` outside the verified range (older, or newer than the newest
    verified release), else None. Pre-releases, dev and local builds count as their release, as in the registry;
    a version that is not PEP 440 is the registry's own warning."""
    from ._registry import _parse_version

    parsed = _parse_version(version)
    bounds = verified_range()
    if parsed is None or bounds is None:
        return None
    from packaging.version import Version

    oldest, newest = bounds
    if Version(oldest) <= Version(parsed.base_version) <= Version(newest):
        return None
    return f"transformers {version} is outside the range hf_genfix has verified ({oldest}\u2013{newest}): {still}"
