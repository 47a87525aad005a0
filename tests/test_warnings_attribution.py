"""Warnings raised inside a wrapped call point where they point without hf_genfix: the user's line (issue 10,
item 5).

Every wrapper the patcher installs is a copy of the fix's function that ``warnings`` steps over while counting
``stacklevel`` (see ``_patcher.hidden_from_warnings``). Checked on synthetic upstream functions (stacklevel 2 and
3, both warnings implementations), on a real upstream warning through ``generate()`` and, structurally, on every
wrapper the installed patches put in place.
"""

from __future__ import annotations

import inspect
import sys
import types
import warnings

import pytest

from hf_genfix._patcher import Patcher, hidden_from_warnings, patch_of

MODULE = "genfix_warning_target"
UPSTREAM = '''
import warnings

def warn2():
    warnings.warn("two", UserWarning, stacklevel=2)
    return 2

def _helper():
    warnings.warn("three", UserWarning, stacklevel=3)

def warn3():
    _helper()
    return 3

def warn1():
    warnings.warn("one", UserWarning)
    return 1
'''


def _pass_through(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs)


def _fix_that_warns(wrapped, instance, args, kwargs):
    warnings.warn("from the fix", UserWarning, stacklevel=2)
    return wrapped(*args, **kwargs)


def _python_warnings():
    """The pure-Python implementation of ``warnings`` (its module loaded again with ``_warnings`` blocked)."""
    import importlib.util

    spec = importlib.util.find_spec("warnings")
    saved = sys.modules.get("_warnings")
    sys.modules["_warnings"] = None
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.modules["_warnings"] = saved
    assert isinstance(module.warn, types.FunctionType)  # really the Python implementation
    return module


IMPLEMENTATIONS = {"c": lambda: warnings, "python": _python_warnings}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def upstream(request):
    module = types.ModuleType(MODULE)
    module.__file__ = f"<{MODULE}>"
    exec(compile(UPSTREAM, module.__file__, "exec"), module.__dict__)
    module.warnings = IMPLEMENTATIONS[request.param]()
    sys.modules[MODULE] = module
    yield module
    del sys.modules[MODULE]


def _caught(call, wmod=warnings):
    """(message, filename, lineno) of the warnings ``call()`` raises."""
    with wmod.catch_warnings(record=True, module=wmod) as caught:
        wmod.simplefilter("always")
        call()
    return [(str(w.message), w.filename, w.lineno) for w in caught]


def _where_called(module, name):
    line = inspect.currentframe().f_lineno + 1
    return _caught(lambda: getattr(module, name)(), module.warnings), line


@pytest.mark.parametrize("name", ["warn1", "warn2", "warn3"])
def test_synthetic_warning_points_where_it_points_without_the_wrapper(upstream, name):
    plain, plain_line = _where_called(upstream, name)
    patcher = Patcher("t", (f"{MODULE}:{name}",))
    patcher.wrap(f"{MODULE}:{name}", _pass_through)
    try:
        assert patch_of(getattr(upstream, name)) == "t"
        patched, patched_line = _where_called(upstream, name)
    finally:
        patcher.undo()
    assert len(plain) == len(patched) == 1
    (msg, file, line), (pmsg, pfile, pline) = plain[0], patched[0]
    assert (pmsg, pfile) == (msg, file)
    if name == "warn1":  # stacklevel 1 names upstream's own line, with or without the wrapper
        assert pline == line and file == f"<{MODULE}>"
    else:
        assert file == __file__ and (line, pline) == (plain_line, patched_line)


def test_stacked_wrappers_are_all_stepped_over(upstream):
    plain, plain_line = _where_called(upstream, "warn3")
    first = Patcher("a", (f"{MODULE}:warn3",))
    second = Patcher("b", (f"{MODULE}:warn3",))
    first.wrap(f"{MODULE}:warn3", _pass_through)
    second.wrap(f"{MODULE}:warn3", _pass_through)
    try:
        patched, patched_line = _where_called(upstream, "warn3")
    finally:
        second.undo()
        first.undo()
    assert plain[0][1:] == (__file__, plain_line) and patched[0][1:] == (__file__, patched_line)


def test_a_fix_that_warns_itself_points_at_its_caller(upstream):
    upstream.warnings = warnings  # the fix warns through the real module
    patcher = Patcher("t", (f"{MODULE}:warn1",))
    patcher.wrap(f"{MODULE}:warn1", _fix_that_warns)
    try:
        caught, line = _where_called(upstream, "warn1")
    finally:
        patcher.undo()
    assert ("from the fix", __file__, line) in caught


def _fix_that_warns_once(wrapped, instance, args, kwargs):
    from hf_genfix.toolkit import warn_once

    warn_once("t", "key", "took the slow path")
    return wrapped(*args, **kwargs)


def test_warn_once_points_at_the_users_line_once_per_key(upstream):
    from hf_genfix import HFGenfixWarning
    from hf_genfix.toolkit import forget_warnings

    upstream.warnings = warnings
    patcher = Patcher("t", (f"{MODULE}:warn1",))
    patcher.wrap(f"{MODULE}:warn1", _fix_that_warns_once)
    forget_warnings("t")
    try:
        first, line = _where_called(upstream, "warn1")
        again, _ = _where_called(upstream, "warn1")
        forget_warnings("t")
        after_forget, _ = _where_called(upstream, "warn1")
    finally:
        patcher.undo()
        forget_warnings("t")
    ours = [c for c in first if "slow path" in c[0]]
    assert len(ours) == 1
    message, file, lineno = ours[0]
    assert (file, lineno) == (__file__, line)
    assert message.startswith("hf_genfix: transformers ") and "HF_GENFIX_" in message and "=off" in message
    assert not [c for c in again if "slow path" in c[0]]
    assert [c for c in after_forget if "slow path" in c[0]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from hf_genfix.toolkit import warn_once
        assert warn_once("t", "other", "x") and not warn_once("t", "other", "x")
    forget_warnings("t")
    assert [w.category for w in caught] == [HFGenfixWarning]


def test_the_copy_behaves_like_the_fix_and_keeps_its_source():
    def wrapper(wrapped, instance, args, kwargs, *, extra=1):
        """doc"""
        return wrapped(*args, **kwargs) + extra

    wrapper.marker = "kept"
    clone = hidden_from_warnings(wrapper)
    assert clone is not wrapper and hidden_from_warnings(clone) is clone
    assert clone(lambda x: x, None, (2,), {}) == 3
    assert (clone.__name__, clone.__qualname__, clone.__doc__, clone.__kwdefaults__, clone.marker) == (
        wrapper.__name__, wrapper.__qualname__, "doc", {"extra": 1}, "kept")
    assert inspect.signature(clone) == inspect.signature(wrapper)
    assert "importlib" in clone.__code__.co_filename and "_bootstrap" in clone.__code__.co_filename


def test_tracebacks_and_inspect_show_the_fixs_source():
    import traceback

    from hf_genfix import catalog

    right_padding = catalog.fix("right-padding")

    clone = hidden_from_warnings(right_padding._generate)
    assert inspect.getsource(clone) == inspect.getsource(right_padding._generate)

    def failing(*args, **kwargs):
        raise RuntimeError("upstream failed")

    with pytest.raises(RuntimeError) as info:
        clone(failing, None, (), {})
    text = "".join(traceback.format_exception(info.value))
    assert "right_padding/fix.py" in text.replace("\\", "/") and "return wrapped(*args, **kwargs)" in text


def test_every_installed_wrapper_is_stepped_over():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_genfix import _activation
    from hf_genfix.doctor import import_targets

    import_targets()
    registry = _activation.registry()
    seen = 0
    for status in registry.status():
        for owner, attr, obj in registry.installed(status.id):
            wrapper = getattr(obj, "_self_wrapper", None)
            if wrapper is None or patch_of(obj) is None:
                continue
            seen += 1
            filename = wrapper.__code__.co_filename
            assert "importlib" in filename and "_bootstrap" in filename, (status.id, owner, attr)
    assert seen


def _helpers_between_wrappers_and_upstream() -> list[tuple[str, str]]:
    """(module, name) of every module-level function of the patches' modules (fixes and shared modules) that
    takes ``wrapped`` and is not itself handed to anything by name (the patcher, ``hidden_from_warnings``): a
    helper that a wrapper, often a lambda closing over the recorder, calls on its way to upstream."""
    import ast
    import pathlib

    import hf_genfix._patches as package
    from hf_genfix.testing.patches import catalog_modules  # the list tests/test_catalog_layout.py reads too

    roots = [pathlib.Path(r) for r in package.__path__]
    found = []
    for path in catalog_modules():
        root = next(r for r in roots if path.is_relative_to(r))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        handed = {a.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                  for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
        module = ".".join(["hf_genfix._patches", *path.relative_to(root).with_suffix("").parts])
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name not in handed and "wrapped" in {
                    a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}:
                found.append((module, node.name))
    return found


def test_every_helper_between_a_wrapper_and_upstream_is_stepped_over():
    """A warning upstream raises with stacklevel 2 under such a helper would name the helper's line, not the
    user's: each is hidden as the wrappers are (``@hidden_from_warnings``). The wrappers themselves are hidden when
    installed (the test above)."""
    import importlib

    helpers = _helpers_between_wrappers_and_upstream()
    assert helpers, "the search finds nothing: it is broken"
    plain = []
    for module, name in helpers:
        code = getattr(importlib.import_module(module), name).__code__
        if not ("importlib" in code.co_filename and "_bootstrap" in code.co_filename):
            plain.append(f"{module}.{name}")
    assert not plain, "decorate with @hidden_from_warnings (hf_genfix.toolkit): " + ", ".join(plain)


def test_a_real_upstream_warning_through_generate_points_at_the_caller():
    """5.24's generate() deprecates ``past_key_values`` with a FutureWarning (stacklevel 2): through
    right-padding's wrapper it must name this file and line, as it does with the patches off."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import hf_genfix
    from hf_genfix.oracles.tiny import tiny_model
    from transformers import DynamicCache

    model = tiny_model("llama")
    ids = torch.tensor([[3, 4, 5, 6]])

    def call():
        line = inspect.currentframe().f_lineno + 1
        caught = _caught(lambda: model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2,
                                                past_key_values=DynamicCache(), do_sample=False))
        return [c for c in caught if "past_key_values" in c[0]], line

    with hf_genfix.disabled():
        plain, plain_line = call()
    if not plain:
        pytest.skip("this release does not deprecate generate(past_key_values=)")
    assert any(s.state == "applied" and s.id == "right-padding" for s in hf_genfix.status())
    patched, patched_line = call()
    assert [(f, l) for _, f, l in plain] == [(__file__, plain_line)] * len(plain)
    assert [(f, l) for _, f, l in patched] == [(__file__, patched_line)] * len(patched)
