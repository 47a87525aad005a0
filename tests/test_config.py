"""Environment parsing: every input is either accepted with its specified meaning or rejected with ConfigError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_genfix import ConfigError
from hf_genfix._config import Config

IDS = ["right-padding", "pad-token", "sliding-window-crop"]
TRUE, FALSE = ("on", "1", "true", "yes"), ("off", "0", "false", "no")


def expected_bool(value: str, default: bool):
    v = value.strip().lower()
    if v == "":
        return default
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    return None  # must be rejected


def expected_toggle(value: str):
    v = value.strip().lower()
    if v in ("", "auto"):
        return "auto"
    if v in TRUE:
        return "on"
    if v in FALSE:
        return "off"
    return None


values = st.one_of(
    st.sampled_from(["on", "OFF", " Yes ", "0", "1", "true", "False", "auto", "AUTO", "", "debug", "Info",
                     "warning", "maybe", "2", "onn", "of f", "\t"]),
    st.text(max_size=8),
)
names = st.one_of(
    st.sampled_from(["HF_GENFIX", "HF_GENFIX_STRICT", "HF_GENFIX_LOG", "HF_GENFIX_RIGHT_PADDING",
                     "HF_GENFIX_PAD_TOKEN", "HF_GENFIX_SLIDING_WINDOW_CROP", "HF_GENFIX_SLIDING_WINDOW",
                     "HF_GENFIX_RIGHT-PADDING", "HF_GENFIXX", "HF_GENFIX_", "PATH", "HF_HOME"]),
    st.text(alphabet="ABCFGHIKNPRSTX_", min_size=1, max_size=14).map(lambda s: "HF_GENFIX" + s),
)


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(names, values, max_size=5))
def test_every_environment_is_accepted_with_its_meaning_or_rejected(environ):
    expected_enabled, expected_strict, expected_log, expected_toggles, valid = True, False, None, {}, True
    by_name = {"HF_GENFIX_" + pid.upper().replace("-", "_"): pid for pid in IDS}
    for name, value in environ.items():
        if name != "HF_GENFIX" and not name.startswith("HF_GENFIX_"):
            continue
        if name == "HF_GENFIX":
            got = expected_bool(value, True)
            valid &= got is not None
            expected_enabled = got
        elif name == "HF_GENFIX_STRICT":
            got = expected_bool(value, False)
            valid &= got is not None
            expected_strict = got
        elif name == "HF_GENFIX_LOG":
            v = value.strip().lower()
            valid &= v in ("", "debug", "info", "warning", "error")
            expected_log = v or None
        elif name in by_name:
            got = expected_toggle(value)
            valid &= got is not None
            expected_toggles[by_name[name]] = got
        else:
            valid = False
    if not valid:
        with pytest.raises(ConfigError) as info:
            Config.from_environ(environ, IDS)
        assert "HF_GENFIX" in str(info.value)
        return
    config = Config.from_environ(environ, IDS)
    assert config.enabled is expected_enabled
    assert config.strict is expected_strict
    assert config.log_level == expected_log
    for pid in IDS:
        assert config.toggle(pid) == expected_toggles.get(pid, "auto")


def test_error_names_variable_value_accepted_values_and_closest_name():
    with pytest.raises(ConfigError) as info:
        Config.from_environ({"HF_GENFIX_RIGHT_PADING": "on"}, IDS)
    assert "HF_GENFIX_RIGHT_PADING" in str(info.value) and "HF_GENFIX_RIGHT_PADDING" in str(info.value)
    with pytest.raises(ConfigError) as info:
        Config.from_environ({"HF_GENFIX_PAD_TOKEN": "sometimes"}, IDS)
    message = str(info.value)
    assert "HF_GENFIX_PAD_TOKEN" in message and "sometimes" in message and "auto" in message
    assert isinstance(info.value, ValueError)


def test_malformed_environment_fails_the_import_before_anything_is_patched():
    from conftest import run_python

    proc = run_python("import hf_genfix", env={"HF_GENFIX": "perhaps"})
    assert proc.returncode != 0
    assert "ConfigError" in proc.stderr and "HF_GENFIX='perhaps'" in proc.stderr
    proc = run_python("""
        import sys
        try:
            import hf_genfix
        except ValueError:
            pass
        # nothing was hooked: a failed configuration never half-activates
        hooks = [f for f in sys.meta_path if type(f).__module__.startswith("hf_genfix")]
        print(len(hooks), "hf_genfix._registry" in sys.modules)
    """, env={"HF_GENFIX_NO_SUCH_PATCH": "on"})
    assert proc.stdout.split()[0] == "0", proc.stderr
