"""hf_genfix active in every worker of torchrun, accelerate launch, multiprocessing, DataLoader and Ray.

Each test starts the real engine on the CPU with 2 workers (``launch_job.py``). Every worker meets two defects
with transformers alone (``worker_jobs.job``): a right-padded batch through ``generate()`` and a tokenizer
without pad token loaded by ``AutoTokenizer`` asked to pad. Started the documented way (docs/workers.md) every
worker must give the oracle's result, report the patches applied and the driver's toggle; started without it,
every worker gets upstream's wrong result and its own ``hf_genfix.workers.report()`` says hf_genfix came late.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.generation import GenRun, check_rows_against_reference  # noqa: E402
from hf_genfix.oracles.padding import ragged_rows  # noqa: E402
from hf_genfix.runner import BOOTSTRAP_DIR  # noqa: E402

pytestmark = [pytest.mark.workers, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
# Set in the driver only; every worker must report the patch disabled. A patch no call here depends on.
TOGGLE = ("HF_GENFIX_MODEL_RWKV_BATCH", "off")
TOGGLED = "model-rwkv-batch"
TIMEOUT = 300


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The tiny model saved as a user's checkpoint, a Llama-3-style tokenizer repo without pad token."""
    from hf_genfix.oracles.tiny import tiny_model
    from hf_genfix.oracles.tokenizers import write_repo

    root = tmp_path_factory.mktemp("workers")
    model = tiny_model("llama")
    model.save_pretrained(root / "model")
    write_repo("llama3", root / "tokenizer")
    inputs = {"model_dir": str(root / "model"), "tokenizer_dir": str(root / "tokenizer"),
              "rows": ragged_rows([5, 3, 7, 2]), "pad_token_id": 0, "texts": ["hello world", "the quick brown fox"]}
    return model, inputs


def launch(shared, tmp_path, command: list, protected: bool, timeout: int = TIMEOUT) -> list:
    """Run ``command`` (``launch_job.py`` under its engine) in a clean environment; the workers' results."""
    _, inputs = shared
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    # The suite itself may run under `hf-genfix run`: the unprotected runs must not inherit its bootstrap.
    path = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOTSTRAP_DIR]
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + path)
    env.update({TOGGLE[0]: TOGGLE[1], "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
                "RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1"})
    if protected:
        command = [program("hf-genfix"), "run", "--"] + command
    start = time.perf_counter()
    # Its own session: on a timeout every process it started (ranks, pool children, a Ray cluster) is ended.
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{command} did not finish in {timeout} s: {err[-6000:]}")
    print(f"{' '.join(Path(c).name for c in command[:6])}: {time.perf_counter() - start:.1f} s")
    assert proc.returncode == 0, (out[-3000:], err[-6000:])
    return json.loads((tmp_path / "results.json").read_text())


def program(name: str) -> str:
    """A console script installed beside this python (torchrun, accelerate, hf-genfix)."""
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return str(path)


def script(*args: str) -> list:
    return [sys.executable, str(HERE / "launch_job.py"), *args]


def check_workers(shared, results: list, protected: bool, n: int = 2, generate: bool = True) -> None:
    """Every worker (``n`` distinct processes) corrected, or, unprotected, wrong and caught by its report."""
    model, inputs = shared
    assert len({r["pid"] for r in results}) == n == len(results), [r["pid"] for r in results]
    for r in results:
        report = r["report"]
        assert report["pid"] == r["pid"]
        assert report["toggles"].get(TOGGLE[0]) == TOGGLE[1], report["toggles"]
        assert report["states"][TOGGLED] == "disabled"
        if generate:
            run = GenRun(sequences=torch.tensor(r["sequences"]),
                         step_logits=[torch.tensor(s) for s in r["step_logits"]], prompt_width=r["prompt_width"])
        if protected:
            assert r["hf_genfix_at_start"], "hf_genfix was not imported when the worker's code started"
            assert report["loaded_before"] == [], report["loaded_before"]
            assert report["states"]["pad-token"] == "applied", report["states"]
            assert r["pad_error"] is None and r["pad_token"] is not None, r["pad_error"]
            assert len({len(row) for row in r["padded"]}) == 1
            if generate:
                assert report["states"]["right-padding"] == "applied"
                check_rows_against_reference(model, inputs["rows"], run, f"worker {r['pid']}")
        else:
            # The defects as upstream has them, and the worker's report says why: transformers ran first.
            assert not r["hf_genfix_at_start"]
            assert r["pad_error"] is not None and "padding token" in r["pad_error"], r["pad_error"]
            assert "transformers.models.auto.tokenization_auto" in report["loaded_before"], report
            if generate:
                assert "transformers.generation.utils" in report["loaded_before"], report
                with pytest.raises(DefectObserved):
                    check_rows_against_reference(model, inputs["rows"], run, f"worker {r['pid']}")


@pytest.mark.parametrize("protected", [True, False], ids=["hf-genfix-run", "unprotected"])
def test_torchrun(shared, tmp_path, protected):
    command = [program("torchrun"), "--nproc-per-node", "2", "--standalone",
               str(HERE / "launch_job.py"), "torchrun", str(tmp_path)]
    check_workers(shared, launch(shared, tmp_path, command, protected), protected)


@pytest.mark.parametrize("protected", [True, False], ids=["hf-genfix-run", "unprotected"])
def test_accelerate_launch(shared, tmp_path, protected):
    pytest.importorskip("accelerate", reason="accelerate is a test extra: pip install 'hf-genfix[workers]'")
    # On a machine without GPUs, --multi_gpu is accelerate's torch.distributed launcher; the script asks for
    # the CPU (Accelerator(cpu=True)) and the ranks talk over gloo.
    command = [program("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "0",
               str(HERE / "launch_job.py"), "accelerate", str(tmp_path)]
    check_workers(shared, launch(shared, tmp_path, command, protected), protected)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
@pytest.mark.parametrize("way", ["hf-genfix-run", "initializer", "unprotected"])
def test_multiprocessing_pool(shared, tmp_path, method, way):
    protected = way != "unprotected"
    command = script(f"pool-{method}", str(tmp_path), *(["setup"] if way == "initializer" else []))
    results = launch(shared, tmp_path, command, protected=way == "hf-genfix-run")
    check_workers(shared, results, protected)


@pytest.mark.parametrize("method, way", [("fork", "hf-genfix-run"), ("spawn", "worker_init_fn"),
                                         ("fork", "unprotected"), ("spawn", "unprotected")])
def test_dataloader_workers(shared, tmp_path, method, way):
    protected = way != "unprotected"
    command = script(f"dataloader-{method}", str(tmp_path), *(["setup"] if way == "worker_init_fn" else []))
    results = launch(shared, tmp_path, command, protected=way == "hf-genfix-run")
    check_workers(shared, results, protected, generate=False)


@pytest.mark.parametrize("way", ["runtime_env", "unprotected"])
def test_ray_task_and_actor(shared, tmp_path, way):
    pytest.importorskip("ray", reason="ray is a test extra: pip install 'hf-genfix[workers]'")
    protected = way == "runtime_env"
    results = launch(shared, tmp_path, script("ray", str(tmp_path), *(["setup"] if protected else [])),
                     protected=False)
    check_workers(shared, results, protected)
