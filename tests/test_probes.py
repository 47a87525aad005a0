"""Every patch is proven by its probe on the transformers release installed here.

On a release inside the manifest's range the probe must show the defect with the patch switched off and pass
with it on; on a release outside it the patch must not be installed and the probe must pass without it (a
defect there means the catalog is wrong).
"""

from __future__ import annotations

import importlib

import pytest

import hf_genfix
from hf_genfix._manifest import load_dir
from hf_genfix._registry import in_range, transformers_version

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch")

MANIFESTS = load_dir()


def _probe(manifest):
    module, _, name = manifest.probe.partition(":")
    return getattr(importlib.import_module(module), name)


def _state(pid):
    return next(s for s in hf_genfix.status() if s.id == pid).state


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.id for m in MANIFESTS])
def test_probe_proves_the_patch(manifest):
    from hf_genfix.catalog import open_finding_for_claims
    from hf_genfix.doctor import import_targets
    from hf_genfix.oracles import DefectObserved, ProbeSkipped

    import_targets()
    version = transformers_version()
    probe = _probe(manifest)
    affected = in_range(manifest.affected, version)
    try:
        with hf_genfix.disabled(manifest.id):
            try:
                figures = probe()
                without = None
            except DefectObserved as exc:
                without = exc
        if affected:
            assert _state(manifest.id) in ("applied", "drift", "failed"), _state(manifest.id)
            assert _state(manifest.id) == "applied", f"{manifest.id} affected on {version} but not applied"
            assert without is not None, (
                f"{manifest.id}: transformers {version} is inside {manifest.affected} but the probe passes "
                f"without the patch ({figures})"
            )
            probe()  # with the patch: must pass (DefectObserved fails the test with its message)
        else:
            assert _state(manifest.id) == "not-needed"
            record = open_finding_for_claims(manifest.sweep, version) if without is not None else None
            if record is not None:
                # Another defect of the same path, on file for this release (doctor's ``open`` verdict): not this
                # patch's, and not a catalog error.
                pytest.skip(f"{manifest.id}: open on transformers {version}: {record['what'][:120]}")
            assert without is None, (
                f"catalog wrong: {manifest.id} shows its defect on transformers {version}, outside "
                f"{manifest.affected}: {without}"
            )
    except ProbeSkipped as exc:
        pytest.skip(f"{manifest.id}: {exc}")
