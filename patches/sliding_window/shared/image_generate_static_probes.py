"""The probes of ``sliding-window-image-generate-static-gemma3``, ``sliding-window-image-generate-static-gemma4``: the
defects, and how they are detected, are in ``_image_generate_static.py``'s docstring.
"""

from __future__ import annotations


def probe_gemma4() -> dict:
    from hf_genfix.oracles import sliding_static as ss

    model = ss.tiny_gemma4_vlm()
    _, inputs = ss.image_prompt(model, [(2, 3)])
    return ss.check_image_generation(model, inputs, "Gemma-4 image prompt, generate() with a static cache",
                                     max_new_tokens=2, cache_implementation="static")


def probe_gemma3() -> dict:
    import transformers
    from packaging.version import Version

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles import sliding_static as ss

    if Version(Version(transformers.__version__).base_version) < Version("4.53.0"):
        # Not this defect: the masks are built by another path, and the static run itself fails.
        raise ProbeSkipped("before 4.53 Gemma-3 generate() with a static cache raises RuntimeError (size 25 vs 24 "
                           "in the attention, measured on 4.52.4): no reference run")
    model = ss.tiny_gemma3_vlm()
    _, inputs = ss.image_prompt(model, [(2, 3)])
    return ss.check_image_generation(model, inputs, "Gemma-3 image prompt, generate() with a static cache",
                                     max_new_tokens=2, cache_implementation="static")
