"""The patcher: wraps in place keeping signatures, covers subclasses created later, undoes to identical objects."""

from __future__ import annotations

import inspect
import sys
import types

import pytest

from hf_genfix import Drift
from hf_genfix._patcher import Patcher, patch_of


@pytest.fixture
def module():
    mod = types.ModuleType("genfix_fake_target")

    class Base:
        def step(self, input_ids, past_key_values=None, *, cache_position=None, **kwargs):
            """Upstream docstring."""
            return ("base", input_ids)

        @classmethod
        def build(cls, n):
            return (cls.__name__, n)

        @staticmethod
        def helper(x):
            return x * 2

    class Child(Base):
        def step(self, input_ids, **kwargs):
            return ("child", input_ids)

    class Plain(Base):
        pass

    mod.Base, mod.Child, mod.Plain = Base, Child, Plain
    mod.function = lambda x: x + 1
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


def tag(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    return ("fixed",) + (result if isinstance(result, tuple) else (result,))


def patcher(*targets):
    return Patcher("test-patch", targets)


def test_wrap_keeps_signature_name_and_doc(module):
    p = patcher("genfix_fake_target:Base.step")
    before = inspect.signature(module.Base().step)
    p.wrap("genfix_fake_target:Base.step", tag)
    bound = module.Base().step
    assert inspect.signature(bound) == before
    assert bound.__name__ == "step" and bound.__doc__ == "Upstream docstring."
    assert module.Base().step(3) == ("fixed", "base", 3)
    assert module.Plain().step(3) == ("fixed", "base", 3)
    assert module.Child().step(3) == ("child", 3)  # overrides are not the base's method
    p.undo()
    assert module.Base.__dict__["step"].__name__ == "step" and patch_of(module.Base.__dict__["step"]) is None


def test_classmethod_staticmethod_and_module_function(module):
    original = {k: module.Base.__dict__[k] for k in ("build", "helper")}
    function = module.function
    p = patcher("genfix_fake_target:Base.build", "genfix_fake_target:Base.helper", "genfix_fake_target:function")
    p.wrap("genfix_fake_target:Base.build", tag)
    p.wrap("genfix_fake_target:Base.helper", tag)
    p.wrap("genfix_fake_target:function", tag)
    assert module.Child.build(2) == ("fixed", "Child", 2)
    assert module.Child().helper(2) == ("fixed", 4)
    assert module.function(1) == ("fixed", 2)
    p.undo()
    assert all(module.Base.__dict__[k] is v for k, v in original.items())
    assert module.function is function


def test_wrap_subclasses_now_and_later_then_undo(module):
    original = {c: c.__dict__["step"] for c in (module.Base, module.Child)}
    p = patcher("genfix_fake_target:Base.step")
    p.wrap_subclasses("genfix_fake_target:Base.step", tag)
    assert module.Child().step(1) == ("fixed", "child", 1)

    class Later(module.Child):  # e.g. a remote-code model defined after hf_genfix patched
        def step(self, input_ids, **kwargs):
            return ("later", input_ids)

    class NoOverride(module.Base):
        pass

    assert Later().step(1) == ("fixed", "later", 1)
    assert NoOverride().step(1) == ("fixed", "base", 1)
    assert "step" not in NoOverride.__dict__
    p.undo()
    assert all(c.__dict__["step"] is f for c, f in original.items())
    assert patch_of(Later.__dict__["step"]) is None
    assert "__init_subclass__" not in module.Base.__dict__

    class AfterUndo(module.Base):
        def step(self, input_ids, **kwargs):
            return ("after", input_ids)

    assert AfterUndo().step(1) == ("after", 1)


def test_never_wraps_twice(module):
    p = patcher("genfix_fake_target:Base.step")
    p.wrap("genfix_fake_target:Base.step", tag)
    with pytest.raises(RuntimeError, match="already wrapped"):
        Patcher("test-patch", ("genfix_fake_target:Base.step",)).wrap("genfix_fake_target:Base.step", tag)
    p.undo()


def test_require_and_undeclared_targets(module):
    p = patcher("genfix_fake_target:Base.step", "genfix_fake_target:Base.missing")
    p.require("genfix_fake_target:Base.step", "past_key_values", "cache_position")
    with pytest.raises(Drift, match="next_sequence_length"):
        p.require("genfix_fake_target:Base.step", "next_sequence_length")
    with pytest.raises(Drift, match="does not exist"):
        p.require("genfix_fake_target:Base.missing")
    with pytest.raises(ValueError, match="does not list"):
        p.wrap("genfix_fake_target:Child.step", tag)


def test_add_gives_a_missing_attribute_and_revert_takes_it_off(module):
    p = patcher("genfix_fake_target:Base")
    p.add("genfix_fake_target:Base", "restored", staticmethod(lambda: "old"))
    assert module.Child.restored() == "old" and module.Plain().restored() == "old"
    with pytest.raises(Drift, match="exists"):
        p.add("genfix_fake_target:Base", "step", None)  # never replaces what the release has
    with pytest.raises(ValueError, match="does not list"):
        p.add("genfix_fake_target:Child", "other", None)
    p.undo()
    assert not hasattr(module.Base, "restored") and not hasattr(module.Child, "restored")


def test_stacked_wrappers_are_seen_and_class_copies_adopted(module):
    from hf_genfix._patcher import wrapped_by

    inner = Patcher("inner", ("genfix_fake_target:Base.step",))
    outer = Patcher("outer", ("genfix_fake_target:Base.step",))
    inner.wrap_subclasses("genfix_fake_target:Base.step", tag)
    outer.wrap("genfix_fake_target:Base.step", tag)
    assert wrapped_by(module.Base.__dict__["step"], "inner")  # seen below another patch's wrapper

    # transformers loads a remote-code class as type(name, (cls, Mixin), {**cls.__dict__}): a copy of the wrapper
    copy = type("Copy", (module.Child,), dict(module.Child.__dict__))
    assert patch_of(copy.__dict__["step"]) == "inner"
    outer.undo()
    inner.undo()
    assert patch_of(copy.__dict__["step"]) is None and copy().step(1) == ("child", 1)
    assert patch_of(module.Base.__dict__["step"]) is None


def _hooks(name):
    """The shape of 5.13-5.15's ``force_accelerate_hooks``: a decorator without ``functools.wraps``."""
    def decorator(forward):
        def wrapped(self, *args, **kwargs):
            getattr(self, name, None)
            return forward(self, *args, **kwargs)
        return wrapped
    return decorator


def test_signature_sees_through_a_decorator_that_hides_it():
    from hf_genfix.toolkit import bound_arguments, signature

    class Mixer:
        @_hooks("conv1d")
        def forward(self, hidden_states, cache_params=None, attention_mask=None):
            return hidden_states

    # What require checks and what a wrapper binds with: the decorated forward's own parameters.
    assert list(signature(Mixer.forward).parameters) == ["self", "hidden_states", "cache_params", "attention_mask"]
    assert list(signature(Mixer().forward).parameters) == ["hidden_states", "cache_params", "attention_mask"]
    m = Mixer()
    assert bound_arguments(Mixer.forward, (m, "h"), {"attention_mask": 1}) == \
        {"self": m, "hidden_states": "h", "attention_mask": 1}
    # Everything else is inspect.signature's: a (*args, **kwargs) function that closes over no single function,
    # or over two, or one that says what it wraps.
    def forwards(*args, **kwargs):
        return args, kwargs
    assert signature(forwards) == inspect.signature(forwards)
    first, second = (lambda a: a), (lambda b: b)

    def two(*args, **kwargs):
        return first(*args) or second(**kwargs)
    assert signature(two) == inspect.signature(two)

    def told(*args, **kwargs):
        return first(*args)
    told.__wrapped__ = second
    assert signature(told) == inspect.signature(told)


def test_cache_argument_finds_the_cache_under_any_name_a_release_takes():
    from hf_genfix.toolkit import cache_argument, signature

    def forward(input_ids, past_key_values=None, cache=None, **kwargs):
        return input_ids

    def bound(*args, **kwargs):
        return signature(forward).bind(*args, **kwargs).arguments

    names = ("cache", "past_key_values", "cache_params")
    assert cache_argument(bound("i", cache="c"), names) == "c"
    assert cache_argument(bound("i", past_key_values="p"), names) == "p"
    # A name given as None does not hide the one the call did hand over; the first name listed wins among several.
    assert cache_argument(bound("i", past_key_values="p", cache=None), names) == "p"
    assert cache_argument(bound("i", past_key_values="p", cache="c"), names) == "c"
    # A deprecated name lands in **kwargs (5.24 takes cache_params through a deprecation wrapper).
    assert cache_argument(bound("i", cache_params="s"), names) == "s"
    assert cache_argument(bound("i", cache_params="s"), ("cache",)) is None
    assert cache_argument(bound("i"), names) is None
    # Arguments already flattened (bound_arguments) are read the same way.
    assert cache_argument({"input_ids": "i", "cache_params": "s"}, names) == "s"


def test_require_checks_the_parameters_behind_such_a_decorator(module):
    def step(self, input_ids, past_key_values=None):
        return input_ids
    module.Plain.step = _hooks("conv1d")(step)
    p = patcher("genfix_fake_target:Plain.step")
    p.require("genfix_fake_target:Plain.step", "past_key_values")
    with pytest.raises(Drift, match="cache_position"):
        p.require("genfix_fake_target:Plain.step", "cache_position")
