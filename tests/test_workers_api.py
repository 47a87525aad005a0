"""hf_genfix.workers without starting an engine: the Ray runtime_env it builds and what report() says."""

from __future__ import annotations

import importlib

import pytest

import hf_genfix.workers as workers
from conftest import run_json


def test_ray_runtime_env_names_the_hook_and_carries_the_drivers_toggles():
    environ = {"HF_GENFIX_PAD_TOKEN": "off", "HF_GENFIX_LOG": "info", "PATH": "/bin", "_HF_GENFIX_RUN_PID": "1"}
    env = workers.ray_runtime_env(environ=environ)
    assert env == {"worker_process_setup_hook": "hf_genfix.workers.setup",
                   "env_vars": {"HF_GENFIX_PAD_TOKEN": "off", "HF_GENFIX_LOG": "info"}}
    # Ray imports the hook by this name in each worker.
    module, name = env["worker_process_setup_hook"].rsplit(".", 1)
    assert getattr(importlib.import_module(module), name) is workers.setup
    assert workers.ray_runtime_env(environ={}) == {"worker_process_setup_hook": "hf_genfix.workers.setup"}


def test_ray_runtime_env_keeps_the_users_keys_and_their_env_vars_win():
    given = {"pip": ["x"], "env_vars": {"HF_GENFIX_PAD_TOKEN": "on", "A": "1"}}
    env = workers.ray_runtime_env(given, environ={"HF_GENFIX_PAD_TOKEN": "off", "HF_GENFIX": "on"})
    assert env["pip"] == ["x"]
    assert env["env_vars"] == {"HF_GENFIX": "on", "HF_GENFIX_PAD_TOKEN": "on", "A": "1"}
    assert given == {"pip": ["x"], "env_vars": {"HF_GENFIX_PAD_TOKEN": "on", "A": "1"}}  # not modified
    assert workers.ray_runtime_env(env, environ={})["worker_process_setup_hook"] == workers.SETUP


def test_ray_runtime_env_refuses_to_replace_another_setup_hook():
    with pytest.raises(ValueError, match="one hook per worker"):
        workers.ray_runtime_env({"worker_process_setup_hook": "mypkg.setup"})


@pytest.mark.slow  # two fresh interpreters
def test_report_names_the_target_modules_that_ran_before_hf_genfix():
    code = """
        import json, sys
        {first}
        import hf_genfix.workers
        from transformers.models.auto import tokenization_auto
        r = hf_genfix.workers.report()
        print(json.dumps(r))
    """
    # transformers is lazy: importing it before hf_genfix runs none of the code the patches wrap.
    early = run_json(code.format(first="import transformers"))
    assert early["loaded_before"] == []
    assert early["states"]["pad-token"] == "applied"
    late = run_json(code.format(first="from transformers.models.auto import tokenization_auto"),
                    env={"HF_GENFIX_PREPARE_INPUTS": "off"})
    assert "transformers.models.auto.tokenization_auto" in late["loaded_before"], late["loaded_before"]
    assert late["states"]["pad-token"] == "applied"  # patched in place from then on
    assert late["toggles"] == {"HF_GENFIX_PREPARE_INPUTS": "off"}
    assert late["states"]["prepare-inputs"] == "disabled"
