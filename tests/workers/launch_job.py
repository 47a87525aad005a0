"""The program each engine runs in tests/workers: ``python launch_job.py ENGINE WORKDIR [setup]``.

ENGINE is ``torchrun`` or ``accelerate`` (run under that launcher, 2 processes), ``pool-spawn`` /
``pool-forkserver`` (a ``multiprocessing.Pool`` of 2), ``dataloader-fork`` / ``dataloader-spawn`` (a DataLoader
with 2 workers) or ``ray`` (a local cluster of 2 CPUs: a task and an actor). ``setup`` passes the in-code hook
(``hf_genfix.workers.setup`` / ``ray_runtime_env()``); without it the program is what a user writes without
hf_genfix, and only ``hf-genfix run`` in front of it can protect its workers. Reads WORKDIR/inputs.json; the
driver (rank 0) writes every worker's result to WORKDIR/results.json. Imports nothing heavy at module level:
spawn and forkserver children import this file again.
"""

from __future__ import annotations

import os
import sys

import worker_jobs


def torchrun(inputs: dict) -> list | None:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, worker_jobs.job(inputs))
    rank = dist.get_rank()
    dist.destroy_process_group()
    return gathered if rank == 0 else None


def accelerate(inputs: dict) -> list | None:
    from accelerate import Accelerator
    from accelerate.utils import gather_object

    acc = Accelerator(cpu=True)
    gathered = gather_object([worker_jobs.job(inputs)])
    return gathered if acc.is_main_process else None


def pool(inputs: dict, method: str, setup: bool) -> list:
    import multiprocessing as mp

    ctx = mp.get_context(method)
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        if setup:
            import hf_genfix.workers

            kwargs = {"initializer": hf_genfix.workers.setup}
        else:
            kwargs = {}
        with ctx.Pool(2, **kwargs) as p:
            return p.map(worker_jobs.at_barrier, [(barrier, inputs)] * 2, chunksize=1)


def dataloader(inputs: dict, method: str, setup: bool) -> list:
    from torch.utils.data import DataLoader

    kwargs = {"multiprocessing_context": method}
    if setup:
        import hf_genfix.workers

        kwargs["worker_init_fn"] = hf_genfix.workers.setup
    # 4 texts in batches of 2: batch i goes to worker i % 2, so each worker pads one batch.
    loader = DataLoader(worker_jobs.TextDataset(inputs["texts"] * 2), batch_size=2, num_workers=2,
                        collate_fn=worker_jobs.Collate(inputs), **kwargs)
    return list(loader)


def ray(inputs: dict, setup: bool) -> list:
    import ray as ray_

    runtime_env = None
    if setup:
        import hf_genfix.workers

        runtime_env = hf_genfix.workers.ray_runtime_env()
        # A local cluster inherits this process's environment: drop the toggles from it, so that only
        # runtime_env can carry them, as to a cluster on other machines.
        for name in hf_genfix.workers.toggles():
            del os.environ[name]

    @ray_.remote
    class Worker:
        def run(self, inputs: dict) -> dict:
            return worker_jobs.job(inputs)

    ray_.init(num_cpus=2, runtime_env=runtime_env, include_dashboard=False, log_to_driver=False)
    try:
        task = ray_.remote(worker_jobs.job).remote(inputs)
        actor = Worker.remote()
        return ray_.get([task, actor.run.remote(inputs)], timeout=240)
    finally:
        ray_.shutdown()


def main(engine: str, workdir: str, setup: bool) -> int:
    inputs = worker_jobs.load_inputs(workdir)
    if engine == "torchrun":
        results = torchrun(inputs)
    elif engine == "accelerate":
        results = accelerate(inputs)
    elif engine.startswith("pool-"):
        results = pool(inputs, engine.split("-", 1)[1], setup)
    elif engine.startswith("dataloader-"):
        results = dataloader(inputs, engine.split("-", 1)[1], setup)
    elif engine == "ray":
        results = ray(inputs, setup)
    else:
        raise SystemExit(f"unknown engine {engine!r}")
    if results is not None:
        worker_jobs.write_results(workdir, results)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1], sys.argv[2], sys.argv[3:] == ["setup"])
    if sys.argv[1] in ("torchrun", "accelerate"):
        # torch 2.13's c10d/gloo now and then aborts a rank at interpreter teardown ("terminate called without an
        # active exception": a C++ thread still joinable), about one launch in eight here, with or without
        # hf_genfix, after the rank's work is done and its results written. Teardown is not what these tests
        # check: a launched rank ends without it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
