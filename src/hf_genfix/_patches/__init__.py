"""The catalog's code: one folder per defect, ``<family>/<id>/`` (``manifest.toml``, ``fix.py``, ``probe.py``,
``program.py`` and its test), and each family's shared modules (``<family>/_<name>.py``).

A wheel carries those folders here, beside this file (pyproject.toml force-includes ``patches/`` as
``hf_genfix/_patches``). A source checkout (an editable install) keeps them at the top of the repository,
``patches/``, where the design card puts them: this package then reads them from there. Nothing under it is
imported until the registry installs a patch (its ``fix.py``) or a tool asks the catalog for a probe or a program.
"""

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isfile(_os.path.join(_here, "verified.json")):
    _checkout = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(_here))), "patches")
    if _os.path.isdir(_checkout):
        __path__.append(_checkout)  # noqa: F821 - a package's own __path__
