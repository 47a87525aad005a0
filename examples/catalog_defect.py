"""A defect of the installed transformers release, from the catalog: its patch's probe (the smallest program
that meets the defect, judged by the oracle) without and with the patch.

    python examples/catalog_defect.py                  # with hf_genfix: RIGHT
    HF_GENFIX=off python examples/catalog_defect.py    # upstream: WRONG
    python examples/catalog_defect.py right-padding    # a patch of your choice (hf-genfix list names them)

Without an argument it takes the first patch, by id, that covers this release and that upstream fixed later
(a defect of this release rather than of every release), else model-rwkv-batch (every release has it).
"""

import hf_genfix

import sys

import transformers
from _show import verdict
from hf_genfix import catalog
from hf_genfix.doctor import import_targets
# The range check of the registry (an internal name: this example picks a patch the way `hf-genfix doctor` reads
# the manifests; a program of yours never needs it).
from hf_genfix._registry import in_range

import_targets()  # import what every patch wraps, so that each one covering this release is installed
manifests = {m.id: m for m in catalog.manifests()}
covering = sorted(pid for pid, m in manifests.items() if in_range(m.affected, transformers.__version__))
fixed_later = [pid for pid in covering if "<" in manifests[pid].affected and manifests[pid].family != "padding"]
pid = sys.argv[1] if len(sys.argv) > 1 else (fixed_later or ["model-rwkv-batch"])[0]
manifest = manifests[pid]
print(f"transformers {transformers.__version__}, patch {pid} ({manifest.affected}): {manifest.summary}")
sys.exit(verdict(f"{pid}: the probe sees no defect", catalog.probe(manifest)))
