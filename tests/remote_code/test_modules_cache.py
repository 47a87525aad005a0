"""The remote-code probes leave nothing in the modules cache (issue 23, section 5).

transformers copies a local repo's code to ``<HF_MODULES_CACHE>/transformers_modules/<folder name>`` when it is
loaded with ``trust_remote_code``; every ``hf-genfix doctor`` run used to leave about 44 such folders (a fresh
name per probe) in the user's ``~/.cache/huggingface/modules``. transformers reads ``HF_MODULES_CACHE`` when it is
imported, so the run is a fresh interpreter with a cache of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

# One probe per way the oracles write a remote repo: a model family saved and reloaded, a remote tokenizer, the
# expert-layout repo.
PROBES = """
import hf_genfix
from hf_genfix import catalog
from hf_genfix.oracles import DefectObserved, ProbeSkipped
for patch in ("remote-code-init-buffers", "remote-code-tokenizer-special-tokens", "remote-code-checkpoint-conversion"):
    try:
        catalog.probe(patch)()
    except (DefectObserved, ProbeSkipped):
        pass
"""


def test_probes_leave_no_module_copies(tmp_path):
    env = dict(os.environ, HF_MODULES_CACHE=str(tmp_path), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", PROBES], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    left = sorted(p.name for p in (tmp_path / "transformers_modules").iterdir()
                  if p.name not in ("__init__.py", "__pycache__"))
    assert left == []
