"""hf_genfix's start-up hook for ``hf-genfix run``; not a module to import yourself.

``hf-genfix run`` puts this directory first on PYTHONPATH, so every Python interpreter the program starts
(the program itself, and its workers: multiprocessing spawn, torchrun, subprocesses) runs this file during
``site`` start-up. It activates hf_genfix, then runs the ``sitecustomize`` the interpreter would have run
without us (the one this file shadows), as ``ddtrace-run`` and ``opentelemetry-instrument`` do.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _activate() -> None:
    try:
        import hf_genfix  # noqa: F401  (importing it registers the patches' import hooks)
    except Exception as exc:  # noqa: BLE001 - start-up must go on; say why hf_genfix is not active
        name = getattr(exc, "name", None)
        top = os.environ.get("_HF_GENFIX_RUN_PID") == str(os.getpid())
        if isinstance(exc, ModuleNotFoundError) and name == "hf_genfix" and not top:
            # A descendant interpreter without hf_genfix installed (another venv, a system tool): not ours.
            return
        if isinstance(exc, ModuleNotFoundError) and name == "hf_genfix":
            # The program asked to run with hf_genfix would run without it: stop before it starts.
            has_it = os.environ.get("_HF_GENFIX_RUN_PYTHON", "the interpreter running hf-genfix")
            sys.stderr.write(
                f"hf-genfix run: hf_genfix is not installed for {sys.executable}, the program's interpreter; "
                f"it is installed for {has_it} (the one running hf-genfix): run the program with that one "
                f"(hf-genfix run -- {has_it} ...) or install hf_genfix for {sys.executable}\n"
            )
            sys.stderr.flush()
            os._exit(2)  # raising here would end in a "Fatal Python error" from site start-up
        sys.stderr.write(
            f"hf_genfix: not activated in {sys.executable} (pid {os.getpid()}): {type(exc).__name__}: {exc}\n"
        )


def _chain_user_sitecustomize() -> None:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    ours = sys.modules.get("sitecustomize")
    module = module_from_spec(spec)
    # The user's module takes the name, as if it had been imported directly.
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        # site.py reports the error as it would have without hf_genfix ("Error in sitecustomize; ...").
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        raise


_activate()
_chain_user_sitecustomize()
