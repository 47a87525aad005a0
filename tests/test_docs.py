"""The README's patch table is generated from the manifests, never edited by hand."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_patch_table_is_generated_from_the_manifests():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
