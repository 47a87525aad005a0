"""Never worse than upstream, for saved files: every save scenario of ``hf_genfix.oracles.saving``, without
hf_genfix and with it, whole saved folders compared byte for byte (issue 23).

Tokenizers (six repo layouts x the user's steps: nothing, a padded call, their own pad = eos by attribute, id,
``add_special_tokens``, set back to eos, ``from_pretrained(pad_token=)``, pad None, either padding side; and the
copies, ``copy``, ``deepcopy``, pickle), remote-code configurations (saved, copied, pickled) and remote-code models
(``from_config``, ``from_pretrained`` of a checkpoint, a deepcopy): where upstream saves, hf_genfix saves the same
bytes, and a reload in the process behaves as the object did before the save (tokenizers pad the same batch,
models give the same logits). A ``worse`` pair fails the test, never a skip; the counts are printed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_saved_folders_are_never_worse_than_upstreams(capsys):
    import transformers

    import hf_genfix
    from hf_genfix import doctor
    from hf_genfix.oracles import differential, saving

    registry = hf_genfix._activation.registry()
    doctor.import_targets(registry)
    with doctor.quiet_logs():
        out = saving.run_scenarios(registry)
    with capsys.disabled():
        print(f"\nsaved folders on transformers {transformers.__version__}: {out['summary']}")
    worse = [f"{name}: {p['detail']}" for name, p in out["pairs"].items() if p["verdict"] == differential.WORSE]
    assert not worse, "hf_genfix saves otherwise than upstream:\n" + "\n".join(worse)
    assert out["counts"][differential.IDENTICAL] >= 90, out["summary"]


@pytest.mark.parametrize("files, expected", [
    (({"a.json": b'{"x": 1}'}, {"a.json": b'{"x": 1}'}), ""),
    (({"a.json": b'{"x": 1}'}, {"a.json": b'{"x": 2}'}), "a.json differs (1 key(s): x: 1 vs 2)"),
    (({"a.json": b"{}"}, {"a.json": b"{}", "b.bin": b""}), "files ['b.bin'] are in one folder only"),
])
def test_folder_difference(files, expected):
    from hf_genfix.oracles.saving import folder_difference

    assert folder_difference(*files) == expected


def test_each_prepared_repo_has_a_folder_name_of_its_own():
    """transformers copies a local repo's code to transformers_modules/<folder name> (shared by every process on
    the machine): two sweeps at once must not write one name (CI's parallel envs overwrote each other's code)."""
    import hf_genfix
    from hf_genfix.oracles import saving

    seen = []
    scenario = saving.SaveScenario("save/names", lambda run: {}, prepare=lambda directory: seen.append(directory.name))
    for _ in range(2):
        saving.differential_save(hf_genfix._activation.registry(), scenario)
    assert len(set(seen)) == 2 and all(name.startswith("shared_") for name in seen)
