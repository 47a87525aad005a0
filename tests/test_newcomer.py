"""What a newcomer meets (issue 29): an unverified transformers release is called so, a missing torch or CUDA is
one line, logs appear once, a typo is one short line, the README's commands run as written, and the docs agree
with the code."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_python

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


# -- 1. a release outside the verified range -------------------------------------------------------------------
def test_verified_range_is_data_the_package_ships():
    from hf_genfix.catalog import verified_range

    oldest, newest = verified_range()
    assert re.fullmatch(r"\d+\.\d+\.\d+", oldest) and re.fullmatch(r"\d+\.\d+\.\d+", newest)
    assert f"transformers {oldest} to {newest}" in README  # the README's "Supported" names the same range


@pytest.mark.parametrize("version, outside", [
    ("4.40.2", True), ("4.46.2", True), ("4.46.3", False), ("5.25.0", False), ("5.25.0rc1", False),
    ("5.25.1", True), ("5.26.0.dev0", True), ("6.0.0", True), ("main", False),
])
def test_outside_the_verified_range_says_so_in_one_line(version, outside):
    from hf_genfix.catalog import outside_verified, verified_range

    oldest, newest = verified_range()
    if version in ("4.46.3", "5.25.0", "5.25.0rc1") and (oldest, newest) != ("4.46.3", "5.25.0"):
        pytest.skip("the range moved: the cases name its ends")
    line = outside_verified(version)
    if not outside:
        assert line is None
        return
    assert line.startswith(f"transformers {version} is outside the range hf_genfix has verified "
                           f"({oldest}\u2013{newest}): ")
    assert "hf-genfix doctor" in line and "\n" not in line


UNVERIFIED = """
    import hf_genfix.catalog as support
    support.verified_range = lambda: ("9.0.0", "9.1.0")  # the installed release is outside this range
"""


def test_library_log_names_an_unverified_release_once():
    pytest.importorskip("transformers")
    proc = run_python(UNVERIFIED + """
    import hf_genfix, transformers
    from hf_genfix.doctor import import_targets
    import_targets()
    hf_genfix.status()
    """)
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "is outside the range hf_genfix has verified (9.0.0" in ln]
    assert len(said) == 1, proc.stderr


def test_list_starts_with_the_unverified_line_and_says_it_once():
    pytest.importorskip("transformers")
    proc = run_python(UNVERIFIED + """
    from hf_genfix.cli import main
    raise SystemExit(main(["list"]))
    """)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("transformers ") and "is outside the range hf_genfix has verified (9.0.0" in first
    assert "outside the range" not in proc.stderr  # the library's log record of it is not said a second time


# -- 2. doctor without torch, or without the device asked for --------------------------------------------------
def test_doctor_without_torch_is_one_line_and_exit_2():
    pytest.importorskip("transformers")
    proc = run_python("""
    import sys

    class NoTorch:  # what an install without torch looks like to an import
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch'", name="torch")
            return None

    sys.meta_path.insert(0, NoTorch())
    from hf_genfix.cli import main
    raise SystemExit(main(["doctor"]))
    """)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("hf-genfix doctor: torch cannot be imported") and "pip install torch" in line
    assert "probe is broken" not in proc.stdout + proc.stderr


def test_doctor_on_a_device_torch_cannot_use_is_one_line_and_exit_2(capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from hf_genfix import doctor

    assert doctor.main(["--device", "cuda"]) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line.startswith("hf-genfix doctor: --device cuda: this torch") and "leave --device out" in line
    assert out == ""


# -- 3. the README's commands run as written after its setup ---------------------------------------------------
def test_readme_activates_the_venv_before_its_first_bare_command():
    """The setup commands create .venv; `hf-genfix ...` / `python app.py` afterwards only work in it."""
    setup = README.index("## Set up on a fresh machine")
    bare = re.search(r"(?<![/\w.-])hf-genfix (run|doctor|list)", README[setup:])
    assert bare, "the README shows no hf-genfix command after its setup"
    assert "source .venv/bin/activate" in README[setup:setup + bare.start()]


# -- 4 and 7. logging: each line once, one summary line at info ------------------------------------------------
PROGRAM = """
    import logging
    logging.basicConfig()  # the user's own handler on the root logger
    import hf_genfix, transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2))
    logging.getLogger("hf_genfix").warning("one warning")
"""


@pytest.mark.parametrize("level", ["info", "debug"])
def test_logs_appear_once_with_the_users_basic_config(level):
    pytest.importorskip("transformers")
    proc = run_python(PROGRAM, env={"HF_GENFIX_LOG": level, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    ours = [ln for ln in proc.stderr.splitlines() if "hf_genfix" in ln]
    assert ours and sum("one warning" in ln for ln in ours) == 1, proc.stderr
    assert not [ln for ln in ours if ln.startswith(("INFO:hf_genfix", "DEBUG:hf_genfix", "WARNING:hf_genfix"))]


def test_info_is_one_summary_line():
    """`hf-genfix run --help` promises one line saying what was applied under HF_GENFIX_LOG=info."""
    pytest.importorskip("transformers")
    proc = run_python(PROGRAM.replace('warning("one warning")', 'debug("detail")'),
                      env={"HF_GENFIX_LOG": "info", "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "hf_genfix" in ln]
    assert line.startswith("INFO hf_genfix: hf_genfix on transformers ") and len(line) < 300, line
    assert "patches fix defects of this release" in line and "`hf-genfix list`" in line
    from hf_genfix import runner

    assert "(one line saying what was applied)" in runner.USAGE


# -- 5. a toggle typo inside a program -------------------------------------------------------------------------
def test_a_typo_in_a_program_is_one_short_line_with_the_closest_name():
    # The program keeps running (upstream, unpatched): tests/test_config.py checks what it then gets.
    proc = run_python("import hf_genfix", env={"HF_GENFIX_RIGHT_PADING": "on"})
    assert proc.returncode == 0
    (last,) = proc.stderr.strip().splitlines()
    assert last.startswith("hf_genfix is inactive") and "HF_GENFIX_RIGHT_PADING='on'" in last
    assert "did you mean HF_GENFIX_RIGHT_PADDING?" in last and last.count("`hf-genfix list`") == 1
    assert len(last) < 300, len(last)


# -- 8. the docs agree with the code ---------------------------------------------------------------------------
def test_readme_lists_every_value_a_per_patch_toggle_accepts():
    from hf_genfix import _config

    (row,) = [ln for ln in README.splitlines() if ln.startswith("| `HF_GENFIX_<ID>` |")]
    values = row.split("|")[2]
    for value in _config._TOGGLES:
        assert re.search(rf"(?<![\w]){value}(?![\w])", values), (value, values)


def test_doctor_dtype_help_lists_what_it_accepts():
    pytest.importorskip("transformers")
    from hf_genfix.oracles.precision import DTYPES, dtype_name

    proc = subprocess.run([sys.executable, "-m", "hf_genfix", "doctor", "--help"], capture_output=True, text=True,
                          env={**__import__("os").environ, "COLUMNS": "200"})
    (line,) = [ln for ln in proc.stdout.splitlines() if "--dtype DTYPE " in ln]
    for name in DTYPES:
        assert dtype_name(name) == name and name in line, (name, line)


def test_api_reference_verdicts_are_whole_sentences():
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = page[page.index("### Doctor verdicts"):]
    section = section[: section.index("\n## ")]
    verdicts = [ln for ln in section.splitlines() if ln.startswith("- `")]
    assert len(verdicts) >= 9
    for line in verdicts:
        # A comment from elsewhere in doctor/report.py glued on reads "... the range What a fresh interpreter ...".
        assert not re.search(r"[a-z] [A-Z][a-z]+ ", line), line


def test_matrix_doc_figures_come_from_the_generator():
    """docs/matrix.md's release figures are tox.ini's (scripts/matrix.py sync writes them); counts the report
    knows (boundaries) are not copied into it by hand."""
    doc = (ROOT / "docs" / "matrix.md").read_text(encoding="utf-8")
    envs = re.findall(r"`tf-(\d+\.\d+\.\d+)`", doc)
    from hf_genfix.catalog import verified_range

    oldest, newest = verified_range()
    assert envs[:2] == [oldest, newest], envs
    assert not re.search(r"\d+ of \d+ boundaries", doc)
    assert "generated by scripts/matrix.py sync" in doc


def test_doctor_text_does_not_puzzle_with_a_budget():
    from hf_genfix import doctor

    report = {"transformers": "5.24.0", "torch": "2", "python": "3", "hf_genfix": "0", "seconds": 99.0,
              "budget_seconds": 30.0, "patches": [], "ok": True}
    text = doctor.render_text(report)
    assert "budget" not in text.lower() and "99 s" in text
    assert textwrap.dedent(text).count("\n") <= 2
