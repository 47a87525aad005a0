"""The parts of scripts/matrix.py, one job each: ``files`` (where things are), ``release_list`` (the derived
list and ``sync``), ``running`` (one env, every env), ``judging`` (the reports read and checked, the diffs) and
``rendering`` (the compat matrix and the CI workflow). Standard library only (plus hf_genfix's manifest loader).
"""
