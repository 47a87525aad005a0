"""``python -m hf_genfix.upgrade X.Y.Z ...``: the same as ``hf-genfix upgrade-check X.Y.Z ...``."""

from . import main

raise SystemExit(main())
