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
                     "HF_GENFIX_RIGHT-PADDING", "HF_GENFIXX", "HF_GENFIX_", "PATH", "HF_HOME", "hf_genfix",
                     "Hf_GenFix_Log", "HFGENFIX", "HF_GEN_FIX_PAD_TOKEN", "GENFIX_SUITE", "HF_GENFI", "_HF_GENFIX_RUN_PID"]),
    st.text(alphabet="ABCFGHIKNPRSTX_", min_size=1, max_size=14).map(lambda s: "HF_GENFIX" + s),
)


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(names, values, max_size=5))
def test_every_environment_is_accepted_with_its_meaning_or_rejected(environ):
    expected_enabled, expected_strict, expected_log, expected_toggles, valid = True, False, None, {}, True
    by_name = {"HF_GENFIX_" + pid.upper().replace("-", "_"): pid for pid in IDS}
    for name, value in environ.items():
        if name.startswith("_") or not name.upper().replace("_", "").replace("-", "").startswith("HFGENFIX"):
            continue  # not ours, nor ours misspelt (any case, any underscores), or private: ignored
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


_STATES = """
    import json, sys
    import hf_genfix, hf_genfix.workers
    import transformers.generation.utils  # a target module of several patches: they would be installed here
    hooks = [f for f in sys.meta_path if type(f).__module__.startswith("hf_genfix")]
    records = hf_genfix.status()
    print(json.dumps({"hooks": len(hooks), "states": sorted({r.state for r in records}),
                      "reasons": sorted({r.reason for r in records}),
                      "installed": sum(bool(hf_genfix._activation.registry().installed(r.id)) for r in records),
                      "config_error": hf_genfix.workers.report()["config_error"]}))
"""


@pytest.mark.parametrize("variable, value, closest", [
    ("HF_GENFIX", "offf", "off"),                         # a typo while switching it off
    pytest.param("HF_GENFIX", "perhaps", None, marks=pytest.mark.slow),
    ("HF_GENFIX_RIGHT_PADING", "on", "HF_GENFIX_RIGHT_PADDING"),
    pytest.param("HF_GENFIX_PAD_TOKEN", "sometimes", None, marks=pytest.mark.slow),
    ("hf_genfix", "off", "HF_GENFIX"),                    # environment names are case-sensitive
    pytest.param("HF_GENFIXX", "off", "HF_GENFIX", marks=pytest.mark.slow),
])
def test_mistyped_environment_keeps_the_program_running_upstream_with_one_error_line(variable, value, closest):
    """A mistyped variable never takes the user's program (or a torchrun rank) down: hf_genfix stays inactive
    (nothing hooked, no patch installed: exactly upstream), says so in one ERROR line naming the variable and the
    closest accepted name or value, and every status() record carries the reason."""
    from conftest import run_json, run_python

    env = {variable: value}
    proc = run_python("import hf_genfix", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{variable}={value!r}" in lines[0] and "inactive" in lines[0] and "upstream" in lines[0]
    if closest:
        assert closest in lines[0]
    got = run_json(_STATES, env=env)
    assert got["hooks"] == 0 and got["installed"] == 0, got
    assert got["states"] == ["disabled"], got
    assert all(f"{variable}={value!r}" in reason for reason in got["reasons"]), got
    assert f"{variable}={value!r}" in got["config_error"]


def test_strict_keeps_the_fail_fast_configerror_before_anything_is_hooked():
    from conftest import run_python

    proc = run_python("import hf_genfix", env={"HF_GENFIX": "perhaps", "HF_GENFIX_STRICT": "on"})
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
    """, env={"HF_GENFIX_NO_SUCH_PATCH": "on", "HF_GENFIX_STRICT": "1"})
    assert proc.stdout.split() == ["0", "False"], proc.stderr


def test_a_patch_switched_on_under_hf_genfix_off_is_warned_about():
    from conftest import run_python

    proc = run_python("import hf_genfix", env={"HF_GENFIX": "off", "HF_GENFIX_RIGHT_PADDING": "on"})
    assert proc.returncode == 0
    assert "HF_GENFIX=off overrides HF_GENFIX_RIGHT_PADDING=on" in proc.stderr
    quiet = run_python("import hf_genfix", env={"HF_GENFIX": "off", "HF_GENFIX_RIGHT_PADDING": "off"})
    assert quiet.stderr == ""


def test_the_command_still_exits_2_in_one_line_on_a_mistyped_variable():
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("HF_GENFIX")}
    for variable, value in (("HF_GENFIX", "offf"), ("hf_genfix", "off")):
        proc = subprocess.run([sys.executable, "-m", "hf_genfix", "list"], capture_output=True, text=True,
                              env={**env, variable: value}, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and f"{variable}={value!r}" in proc.stderr
