"""Every patch is installed by the smallest user program that meets its defect (issue 10, item 1).

A patch is decided once all its target modules are imported. A target in a module the user's program never
imports (``pad-token`` once waited for ``transformers.data.data_collator`` in inference programs) leaves the
patch ``pending`` while the defect hits. So, for every manifest in patches/ (new ones are covered automatically
and fail until ``PROGRAMS`` names their program), the program runs in a fresh interpreter with only the imports
a user writes (``import hf_genfix, transformers`` and the classes the program names) and the patch must end:

- ``applied`` where the installed release is inside its range; the program's own checks of the defect pass;
- decided (``forced``, or ``drift`` where the release lacks what the fix needs) outside its range, run with
  ``HF_GENFIX_<ID>=on``: the same imports reach it on every release of the matrix, not only affected ones.

The repos the programs load (tokenizer files, config.json, a tiny checkpoint) are written by this process
beforehand; the child never imports hf_genfix's oracles.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_python

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_genfix._config import env_name  # noqa: E402
from hf_genfix._manifest import load_dir  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402

PATCHES = Path(__file__).resolve().parents[1] / "patches"
MANIFESTS = {m.id: m for m in load_dir(PATCHES)}

# -- the programs: code run after ``import hf_genfix, transformers``; REPO is the folder the setup wrote --------
TOKENIZER = """
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(REPO + "/llama3")
if applied("pad-token"):
    tok(["hello world", "the fox"], padding=True)
    assert tok.pad_token == tok.eos_token, tok.pad_token
side = AutoTokenizer.from_pretrained(REPO + "/mistral-tok").padding_side
if applied("padding-side"):
    assert side == "left", side
"""

PIPELINE = """
from transformers import pipeline
pipe = pipeline("text-generation", model=REPO + "/checkpoint")
if applied("pad-token"):
    assert pipe.tokenizer.pad_token == pipe.tokenizer.eos_token
    pipe.tokenizer(["hello world", "the fox"], padding=True)
pipe("hello world", max_new_tokens=2, do_sample=False)
"""

COLLATOR = """
from transformers import AutoTokenizer, DataCollatorForLanguageModeling
tok = AutoTokenizer.from_pretrained(REPO + "/llama3")
rows = [tok(t)["input_ids"] + [tok.eos_token_id] for t in ("hello world, how are you", "the fox")]
batch = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)(
    [dict(input_ids=r, attention_mask=[1] * len(r)) for r in rows])
if applied("pad-token-collator") and applied("pad-token"):
    real = batch["attention_mask"].bool() & (batch["input_ids"] == tok.eos_token_id)
    assert (batch["labels"][real] == tok.eos_token_id).all(), batch["labels"]
"""


def _generate(folder: str, model_class: str = "AutoModelForCausalLM", **generate: object) -> str:
    return f"""
import torch
from transformers import AutoConfig, {model_class}
config = AutoConfig.from_pretrained(REPO + "/{folder}")
model = {model_class + ".from_config" if model_class.startswith("Auto") else model_class}(config).eval()
ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False, **{generate!r})
"""


def _remote(family: str) -> str:
    return f"""
import torch
from transformers import AutoConfig, AutoModelForCausalLM
config = AutoConfig.from_pretrained(REPO + "/remote_{family}_{os.getpid()}", trust_remote_code=True)
model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
ids = torch.tensor([[17, 44, 91, 23, 5]])
model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
"""


# ChatGLM's own streaming loop (stream_chat) from its tokenizer's batch: the remote tokenizer, then the model.
REMOTE_CHATGLM_STREAM = f"""
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
repo = REPO + "/remote_chatglm3_{os.getpid()}"
tok = AutoTokenizer.from_pretrained(repo, trust_remote_code=True)
config = AutoConfig.from_pretrained(repo, trust_remote_code=True)
model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
inputs = tok(["hi there", "hello"], padding=True, return_tensors="pt")
*_, last = model.stream_generate(**inputs, max_new_tokens=3, do_sample=False)
"""


# A remote tokenizer that adds no special tokens (Qwen-1's shape), encoding a batch.
REMOTE_PLAIN_TOKENIZER = f"""
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(REPO + "/remote_plain_tokenizer_{os.getpid()}", trust_remote_code=True)
batch = tok(["hi there", "hello world again"], padding=True)
assert None not in sum(batch["input_ids"], []), batch
"""


# A Hub-style repo (code and weights) loaded with from_pretrained: build, save next to the code, load back.
def _remote_reload(family: str) -> str:
    return f"""
import torch
from transformers import AutoConfig, AutoModelForCausalLM
repo = REPO + "/remote_{family}_{os.getpid()}"
config = AutoConfig.from_pretrained(repo, trust_remote_code=True)
AutoModelForCausalLM.from_config(config, trust_remote_code=True).save_pretrained(repo)
model = AutoModelForCausalLM.from_pretrained(repo, trust_remote_code=True).eval()
ids = torch.tensor([[17, 44, 91, 23, 5]])
model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
"""


# A remote mixture-of-experts repo of DeepSeek-V2's layout: build, save next to the code, load back.
REMOTE_MOE_RELOAD = f"""
import torch
from transformers import AutoConfig, AutoModelForCausalLM
repo = REPO + "/remote_moe_{os.getpid()}"
config = AutoConfig.from_pretrained(repo, trust_remote_code=True)
torch.manual_seed(0)
saved = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
saved.save_pretrained(repo)
model = AutoModelForCausalLM.from_pretrained(repo, trust_remote_code=True).eval()
ids = torch.tensor([[17, 44, 91, 23, 5]])
if applied("remote-code-checkpoint-conversion"):
    assert torch.allclose(model(input_ids=ids).logits, saved(input_ids=ids).logits)
"""


# The same repo loaded twice in one process (a notebook, a server reloading its model): the second load.
REMOTE_INTERNLM2_TWICE = f"""
import torch
from transformers import AutoConfig, AutoModelForCausalLM
repo = REPO + "/remote_internlm2_{os.getpid()}"
for _ in range(2):
    config = AutoConfig.from_pretrained(repo, trust_remote_code=True)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
ids = torch.tensor([[17, 44, 91, 23, 5]])
model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
"""


def _paligemma(**generate: object) -> str:
    """An image prompt (the image's placeholder tokens, then text) through PaliGemmaForConditionalGeneration."""
    return f"""
import torch
from transformers import AutoConfig, PaliGemmaForConditionalGeneration
config = AutoConfig.from_pretrained(REPO + "/paligemma")
model = PaliGemmaForConditionalGeneration(config).eval()
vision = config.vision_config
image = getattr(config, "image_token_id", None) or config.image_token_index
ids = torch.tensor([[image] * (vision.image_size // vision.patch_size) ** 2 + [3, 4, 5, 6]])
pixels = torch.randn(1, 3, vision.image_size, vision.image_size)
# suppress_tokens: a generated image token would be counted against the image's features on the next uncached
# step (upstream's ValueError, with or without hf_genfix; seen once in CI on 4.46.3)
model.generate(ids, attention_mask=torch.ones_like(ids), pixel_values=pixels, token_type_ids=torch.zeros_like(ids),
               max_new_tokens=3, do_sample=False, suppress_tokens=[image], **{generate!r})
"""


def _idefics(folder: str, model_class: str) -> str:
    return f"""
import torch
from transformers import AutoConfig, {model_class}
model = {model_class}(AutoConfig.from_pretrained(REPO + "/{folder}")).eval()
ids = torch.tensor([[1, 122, 122, 122, 122, 60, 85, 28]])
model.generate(ids, attention_mask=torch.ones_like(ids), pixel_values=torch.rand(1, 1, 3, 16, 16),
               pixel_attention_mask=torch.ones(1, 1, 16, 16, dtype=torch.bool), use_cache=False,
               max_new_tokens=3, do_sample=False, suppress_tokens=[122])  # no generated image token (as PaliGemma)
"""


def _qwen_vl(folder: str, model_class: str) -> str:
    """One image (4x4 patches: 4 soft tokens between vision start and end) through a Qwen-VL generate()."""
    return f"""
import inspect
import torch
from transformers import AutoConfig, {model_class}
model = {model_class}(AutoConfig.from_pretrained(REPO + "/{folder}")).eval()
ids = torch.tensor([[1, 5, 6, 120, 122, 122, 122, 122, 121, 7, 8]])
image = dict(pixel_values=torch.rand(16, 24), image_grid_thw=torch.tensor([[1, 4, 4]]))
if "mm_token_type_ids" in inspect.signature(model.forward).parameters:
    image["mm_token_type_ids"] = (ids == 122).long()
model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False, **image)
"""


# patch id -> the programs that meet its defect (names of PROGRAM_CODE). A patch missing here fails its test.
PROGRAMS: dict[str, tuple[str, ...]] = {
    "pad-token": ("tokenizer", "pipeline"),
    "pad-token-collator": ("collator",),
    "padding-side": ("tokenizer",),
    "right-padding": ("llama",),
    "prepare-inputs": ("llama",),
    "legacy-cache": ("llama",),
    "prepare-inputs-logits-to-keep": ("phi3",),
    "sliding-window-draft-keys": ("mistral-assisted",),
    "drafting-cache-crop": ("mistral-assisted",),
    "drafting-mtp-init": ("mistral-assisted",),  # the generator class lives in candidate_generator, as above
    "model-rwkv-batch": ("rwkv",),
    "model-kosmos2-padded-positions": ("kosmos-2",),
    "model-idefics2-uncached-pixels": ("idefics2",),
    "model-idefics3-uncached-pixels": ("idefics3",),
    "model-smolvlm-uncached-pixels": ("smolvlm",),
    "model-falcon-h1-chunk-state": ("falcon-h1",),
    "model-mamba-continuation": ("mamba",),
    "model-mamba-state-chunk": ("mamba",),
    "model-falcon-mamba-state-chunk": ("falcon-mamba",),
    "model-falcon-mamba-continuation": ("falcon-mamba",),
    "model-mamba2-continuation": ("mamba2",),
    "model-zamba-chunk-state": ("zamba",),
    "model-zamba2-step-dt-limit": ("zamba2",),
    "model-zamba2-chunk-scan": ("zamba2",),
    "model-xglm-positions": ("xglm", "xglm-no-cache"),
    "prepare-inputs-full-ids-positions": ("openai-gpt",),
    "model-led-static-cache": ("led-static",),
    "model-fsmt-static-cache": ("fsmt-static",),
    "model-fsmt-cached-positions": ("fsmt-static",),
    "model-fsmt-uncached-mask": ("fsmt-uncached",),
    "model-paligemma-static-cache": ("paligemma-static",),
    "model-paligemma-uncached-prefix": ("paligemma-uncached",),
    "decoding-image-prefill-chunks": ("llama",),  # a target in generation.utils: any generate() imports it
    "decoding-image-prefill-chunks-bidirectional": ("gemma3-vlm",),
    "model-llava-legacy-decode-mask": ("llava",),
    "model-qwen2-vl-rope-deltas": ("qwen2-vl",),
    "model-qwen2-vl-padded-deltas": ("qwen2-vl",),
    "model-qwen2-5-vl-padded-deltas": ("qwen2-5-vl",),
    "model-qwen2-vl-rope-deltas-steps": ("qwen2-vl",),
    "model-qwen2-5-vl-rope-deltas": ("qwen2-5-vl",),
    "model-qwen2-5-vl-rope-deltas-steps": ("qwen2-5-vl",),
    "model-mvp-static-cache": ("mvp-static",),
    "model-nllb-moe-static-cache": ("nllb-moe-static",),
    "model-seamless-m4t-static-cache": ("seamless_m4t-static",),
    "model-seamless-m4t-v2-static-cache": ("seamless_m4t_v2-static",),
    "padding-prefill-chunks": ("mistral-prefill-chunks",),
    # remote code: a trust_remote_code repo written for an older transformers, loaded and generating
    "remote-code-attn-mask-utils": ("remote-deepseek",),
    "remote-code-mask-warning": ("remote-deepseek",),
    "remote-code-cache-api": ("remote-deepseek",),
    "remote-code-attention-mask": ("remote-deepseek",),
    "remote-code-removed-names": ("remote-deepseek",),
    "remote-code-model-methods": ("remote-chatglm3", "remote-chatglm3-stream"),
    "remote-code-reorder-cache": ("remote-deepseek",),
    "remote-code-extract-past": ("remote-chatglm3",),
    "remote-code-update-kwargs": ("remote-chatglm3",),
    "remote-code-config-defaults": ("remote-chatglm3", "remote-chatglm3-stream"),
    "remote-code-config-generation-defaults": ("remote-chatglm3",),
    "remote-code-num-hidden-layers": ("remote-chatglm3",),
    "remote-code-rope-scaling": ("remote-internlm2",),
    "remote-code-tied-weights": ("remote-minicpm",),
    "remote-code-init-buffers": ("remote-deepseek-reload",),
    "remote-code-init-weights": ("remote-deepseek-reload",),
    "remote-code-generation-mixin": ("remote-internlm2-twice",),
    "remote-code-post-init": ("remote-chatglm3-reload",),
    "remote-code-checkpoint-conversion": ("remote-moe-reload",),
    "remote-code-tokenizer-pad": ("remote-chatglm3-stream",),
    "remote-code-tokenizer-special-tokens": ("remote-plain-tokenizer",),
    "remote-code-logits-warper": ("remote-chatglm3-stream",),
    "decoding-unprepared-config": ("remote-chatglm3-stream",),
    "decoding-prompt-lookup-length": ("llama-prompt-lookup",),
    "decoding-prompt-lookup-no-eos": ("llama-prompt-lookup",),
    "decoding-gpt-neox-static-cache": ("gpt-neox-static",),
    "decoding-processor-padding": ("llama",),
    "decoding-inputs-embeds-penalty": ("llama",),
    "sliding-window-image-generate-static-gemma3": ("gemma3-vlm",),
    "sliding-window-image-generate-static-gemma4": ("gemma4-vlm",),
    "sliding-window-dynamic-full": ("mistral-assisted",),
    "sliding-window-rollback-cache": ("mistral-assisted",),
    "sliding-window-hybrid-cache": ("gemma2-sliding-cache",),
    "sliding-window-prefill-chunks": ("mistral-prefill-chunks",),
    "sliding-window-static-chunk": ("mistral-static",),
    "sliding-window-kv-shared-zero": ("gemma4-text",),
    "sliding-window-image-index-gemma3": ("gemma3-vlm",),
    "sliding-window-image-mask-gemma3": ("gemma3-vlm",),
    "sliding-window-image-static-gemma3": ("gemma3-vlm",),
    "sliding-window-image-mask-gemma4": ("gemma4-vlm",),
    "sliding-window-image-static-gemma4": ("gemma4-vlm",),
    "sliding-window-full-cache-phimoe": ("phimoe",),
    "sliding-window-full-cache-qwen2-moe": ("qwen2-moe",),
    "model-jetmoe-static-cache": ("jetmoe-static",),
    "sliding-window-gemma2-decode-mask": ("gemma2",),
    "sliding-window-ring-roll": ("gemma2",),
    "model-speech-to-text-2-positions": ("speech-to-text-2",),
}

PROGRAM_CODE: dict[str, str] = {
    "tokenizer": TOKENIZER,
    "pipeline": PIPELINE,
    "collator": COLLATOR,
    "llama": _generate("llama"),
    "phi3": _generate("phi3"),
    "mistral-assisted": """
import torch
from transformers import AutoConfig, AutoModelForCausalLM
config = AutoConfig.from_pretrained(REPO + "/mistral")
model = AutoModelForCausalLM.from_config(config).eval()
ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
               assistant_model=AutoModelForCausalLM.from_config(config).eval())
""",
    "gemma2-sliding-cache": _generate("gemma2", cache_implementation="sliding_window"),
    "mistral-prefill-chunks": _generate("mistral", prefill_chunk_size=4),
    "mistral-static": _generate("mistral", cache_implementation="static"),
    "gemma4-text": _generate("gemma4"),
    "rwkv": _generate("rwkv", "RwkvForCausalLM"),
    "falcon-h1": _generate("falcon-h1"),
    "mamba": _generate("mamba", "MambaForCausalLM"),
    "falcon-mamba": _generate("falcon-mamba", "FalconMambaForCausalLM"),
    "mamba2": _generate("mamba2", "Mamba2ForCausalLM"),
    "zamba": _generate("zamba", "ZambaForCausalLM"),
    "zamba2": _generate("zamba2", "Zamba2ForCausalLM"),
    "xglm": _generate("xglm"),
    "openai-gpt": _generate("openai-gpt"),
    "xglm-no-cache": _generate("xglm", use_cache=False),
    "llama-prompt-lookup": _generate("llama", prompt_lookup_num_tokens=3),
    "remote-deepseek": _remote("deepseek"),
    "remote-chatglm3": _remote("chatglm3"),
    "remote-internlm2": _remote("internlm2"),
    "remote-minicpm": _remote("minicpm"),
    "remote-deepseek-reload": _remote_reload("deepseek"),
    "remote-chatglm3-reload": _remote_reload("chatglm3"),
    "remote-chatglm3-stream": REMOTE_CHATGLM_STREAM,
    "remote-internlm2-twice": REMOTE_INTERNLM2_TWICE,
    "remote-plain-tokenizer": REMOTE_PLAIN_TOKENIZER,
    "remote-moe-reload": REMOTE_MOE_RELOAD,
    "gpt-neox-static": _generate("gpt-neox", cache_implementation="static"),
    "gemma3-vlm": _generate("gemma3-vlm", "Gemma3ForConditionalGeneration"),
    "gemma4-vlm": _generate("gemma4-vlm", "Gemma4ForConditionalGeneration"),
    # Kosmos-2's generate() takes the pixels first; a left-padded batch of two image prompts (4 latent queries).
    "kosmos-2": """
import torch
from transformers import AutoConfig, Kosmos2ForConditionalGeneration
config = AutoConfig.from_pretrained(REPO + "/kosmos-2")
model = Kosmos2ForConditionalGeneration(config).eval()
ids = torch.tensor([[0, 0, 1, 120, 122, 122, 122, 122, 121, 5], [1, 120, 122, 122, 122, 122, 121, 5, 6, 7]])
model.generate(pixel_values=torch.rand(2, 3, 16, 16), input_ids=ids, attention_mask=(ids != 0).long(),
               image_embeds_position_mask=(ids == 122).long(), max_new_tokens=3, do_sample=False)
""",
    # Idefics2 / Idefics3 / SmolVLM: one image (4 placeholder tokens) and generate(use_cache=False).
    "idefics2": _idefics("idefics2", "Idefics2ForConditionalGeneration"),
    "idefics3": _idefics("idefics3", "Idefics3ForConditionalGeneration"),
    "smolvlm": _idefics("smolvlm", "SmolVLMForConditionalGeneration"),
    "phimoe": _generate("phimoe"),
    "qwen2-moe": _generate("qwen2-moe"),
    "jetmoe-static": _generate("jetmoe", cache_implementation="static"),
    "gemma2": _generate("gemma2"),
    "speech-to-text-2": _generate("speech-to-text-2"),
    "paligemma-static": _paligemma(cache_implementation="static"),
    # Encoder-decoder generate(): the decoder layers' module is imported by the model class (a static cache is
    # what the patches correct; Seamless refuses it loudly with hf_genfix, so its program generates plainly).
    **{f"{t}-static": _generate(t, "AutoModelForSeq2SeqLM", cache_implementation="static")
       for t in ("led", "fsmt", "mvp", "nllb-moe")},
    **{f"{t}-static": _generate(t, "AutoModelForSeq2SeqLM") for t in ("seamless_m4t", "seamless_m4t_v2")},
    "paligemma-uncached": _paligemma(use_cache=False),
    # FSMT without cache, from a config built directly (the probe's own, tiny_fsmt).
    "fsmt-uncached": """
import torch
from transformers import AutoConfig, FSMTForConditionalGeneration
model = FSMTForConditionalGeneration(AutoConfig.from_pretrained(REPO + "/fsmt-direct")).eval()
src = torch.tensor([[5, 6, 7, 8, 9]])
model.generate(src, attention_mask=torch.ones_like(src), max_new_tokens=3, do_sample=False, use_cache=False,
               decoder_start_token_id=1, pad_token_id=0)
""",
    "qwen2-vl": _qwen_vl("qwen2-vl", "Qwen2VLForConditionalGeneration"),
    "qwen2-5-vl": _qwen_vl("qwen2-5-vl", "Qwen2_5_VLForConditionalGeneration"),
    "llava": """
import torch
from transformers import AutoConfig, LlavaForConditionalGeneration
config = AutoConfig.from_pretrained(REPO + "/llava")
model = LlavaForConditionalGeneration(config).eval()
size = config.vision_config.image_size
ids = torch.tensor([[0, 0, 5] + [config.image_token_index] * config.image_seq_length + [6, 7],
                    [4, 5, 6] + [config.image_token_index] * config.image_seq_length + [6, 7]])
mask = torch.tensor([[0, 0] + [1] * (ids.shape[1] - 2), [1] * ids.shape[1]])
model.generate(ids, attention_mask=mask, pixel_values=torch.rand(2, 3, size, size), max_new_tokens=2,
               do_sample=False, pad_token_id=0)
""",
}

CHILD = """
import json, sys
import hf_genfix, torch, transformers
# Seeded: a random model's greedy tokens are then the same on every run of a release (an image model that
# generates its own image token, say, fails every time or never, not once in 60 runs).
torch.manual_seed(0)
REPO = {repo!r}
def applied(pid):
    return next(s for s in hf_genfix.status() if s.id == pid).state == "applied"
error = None
try:
{body}
except Exception as exc:
    error = f"{{type(exc).__name__}}: {{exc}}"
print(json.dumps({{"error": error, "states": {{s.id: [s.state, s.reason] for s in hf_genfix.status()}}}}))
"""


def _write_repos(root: Path) -> dict[str, str]:
    """Write what the programs load; returns folder -> why it could not be written (model type missing)."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sliding import MODELS, WINDOW
    from hf_genfix.oracles.sliding_static import tiny_gemma3_vlm, tiny_gemma4_vlm
    from hf_genfix.oracles.sweep_families import build_image_text, build_seq2seq
    from hf_genfix.oracles.sweep import _ssm_overrides
    from hf_genfix.oracles.tiny import tiny_config, tiny_model
    from hf_genfix.oracles.tokenizers import special_ids, write_repo

    from hf_genfix.oracles.legacy_models import write_family, write_moe_repo, write_plain_tokenizer

    write_plain_tokenizer(root / f"remote_plain_tokenizer_{os.getpid()}")
    write_moe_repo(root / f"remote_moe_{os.getpid()}")
    for family in ("deepseek", "chatglm3", "internlm2", "minicpm"):
        # transformers copies remote code to transformers_modules/<folder name>: a name of this process's own,
        # or parallel tox envs overwrite each other's copies
        write_family(family, root / f"remote_{family}_{os.getpid()}")
    write_repo("llama3", root / "llama3")
    write_repo("mistral", root / "mistral-tok")
    write_repo("llama3", root / "checkpoint")
    tiny_model("llama", **special_ids("llama3")).save_pretrained(root / "checkpoint")
    missing: dict[str, str] = {}
    configs = {
        "llama": lambda: tiny_config("llama"),
        "phi3": lambda: tiny_config("phi3"),
        "rwkv": lambda: tiny_config("rwkv"),
        "xglm": lambda: tiny_config("xglm"),
        "phimoe": lambda: tiny_config("phimoe", sliding_window=WINDOW),
        "qwen2-moe": lambda: tiny_config("qwen2_moe", sliding_window=WINDOW, use_sliding_window=True, num_experts=4,
                                         moe_intermediate_size=16, shared_expert_intermediate_size=16),
        "gpt-neox": lambda: tiny_config("gpt_neox", attn_implementation="eager"),
        "mistral": lambda: tiny_config("mistral", sliding_window=WINDOW),
        "gemma2": lambda: tiny_config(MODELS["gemma2"][0], sliding_window=WINDOW, **MODELS["gemma2"][1]),
        "gemma4": lambda: tiny_config(MODELS["gemma4"][0], sliding_window=WINDOW, **MODELS["gemma4"][1]),
        "gemma3-vlm": lambda: tiny_gemma3_vlm().config,
        "gemma4-vlm": lambda: tiny_gemma4_vlm().config,
        "kosmos-2": lambda: build_image_text("kosmos-2").config,
        "paligemma": lambda: build_image_text("paligemma").config,
        "idefics2": lambda: build_image_text("idefics2").config,
        "idefics3": lambda: build_image_text("idefics3").config,
        "smolvlm": lambda: build_image_text("smolvlm").config,
        "qwen2-vl": lambda: build_image_text("qwen2_vl").config,
        "llava": lambda: build_image_text("llava").config,
        "fsmt-direct": lambda: _fsmt_config(),
        "qwen2-5-vl": lambda: build_image_text("qwen2_5_vl").config,
        **{t: (lambda t=t: build_seq2seq(t).config)
           for t in ("led", "fsmt", "mvp", "nllb-moe", "seamless_m4t", "seamless_m4t_v2")},
        "falcon-h1": lambda: _buildable("falcon_h1", **_ssm_overrides("falcon_h1")),
        "mamba": lambda: _buildable("mamba"),
        "falcon-mamba": lambda: _buildable("falcon_mamba"),
        "mamba2": lambda: _buildable("mamba2"),
        "zamba": lambda: _buildable("zamba", use_mamba_kernels=False),
        # use_mem_rope: without it 5.0-5.3 cannot run a Zamba2 at all (no rotary_emb), so no program would reach it.
        "zamba2": lambda: _buildable("zamba2", use_mamba_kernels=False, use_mem_rope=True),
        "xglm": lambda: _buildable("xglm"),
        "openai-gpt": lambda: _buildable("openai-gpt"),
        "phimoe": lambda: tiny_config("phimoe", sliding_window=WINDOW),
        "qwen2-moe": lambda: tiny_config("qwen2_moe", sliding_window=WINDOW, use_sliding_window=True,
                                         max_window_layers=0, num_experts=4, moe_intermediate_size=16,
                                         shared_expert_intermediate_size=16),
        "jetmoe": lambda: tiny_config("jetmoe", kv_channels=8),
        "speech-to-text-2": lambda: tiny_config("speech_to_text_2"),
    }
    for folder, make in configs.items():
        try:
            make().save_pretrained(root / folder)
        except ProbeSkipped as exc:
            missing[folder] = str(exc)
    return missing


def _buildable(model_type: str, **overrides: object) -> object:
    """A tiny config, or ProbeSkipped where the release has no such model or cannot build its config (5.4.0's
    FalconH1Config fails its own validation)."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.tiny import tiny_config

    try:
        return tiny_config(model_type, **overrides)
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ProbeSkipped(f"{model_type}: {type(exc).__name__}") from exc


def _fsmt_config() -> object:
    from hf_genfix.fixes.models.model_fsmt_uncached_mask import tiny_fsmt

    return tiny_fsmt().config


def _program_folder(name: str) -> str | None:
    for folder in ("llama", "phi3", "rwkv", "gpt-neox", "mistral", "gemma2", "gemma4-vlm", "gemma3-vlm", "gemma4",
                   "kosmos-2", "falcon-h1", "falcon-mamba", "mamba2", "mamba", "zamba2", "zamba", "xglm", "openai-gpt", "phimoe", "qwen2-moe", "jetmoe",
                   "speech-to-text-2", "paligemma", "idefics2", "idefics3", "smolvlm", "led", "fsmt", "mvp",
                   "nllb-moe", "seamless_m4t", "seamless_m4t_v2", "qwen2-vl", "qwen2-5-vl", "llava", "fsmt-direct"):
        if f'"/{folder}"' in PROGRAM_CODE[name]:
            return folder
    return None


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    root = tmp_path_factory.mktemp("reachability")
    missing = _write_repos(root)
    version = transformers.__version__
    results: dict[str, dict] = {}

    def run(name: str) -> dict:
        if name not in results:
            folder = _program_folder(name)
            if folder in missing:
                results[name] = {"skip": missing[folder]}
                return results[name]
            # Outside its range, a patch reached by this program is forced: its state then still says whether
            # the program's imports reach it on this release.
            forced = {env_name(pid): "on" for pid, names in PROGRAMS.items()
                      if name in names and not in_range(MANIFESTS[pid].affected, version)}
            body = "\n".join("    " + line for line in PROGRAM_CODE[name].splitlines())
            proc = run_python(CHILD.format(body=body, repo=str(root)), env=dict(forced, OMP_NUM_THREADS="1"))
            assert proc.returncode == 0, proc.stderr[-4000:]
            results[name] = dict(json.loads(proc.stdout.strip().splitlines()[-1]), forced=sorted(forced))
        return results[name]

    return run


def test_every_patch_has_a_program():
    assert set(PROGRAMS) == set(MANIFESTS), (
        "tests/test_patch_reachability.py: PROGRAMS must name the smallest user program that meets each "
        f"patch's defect; missing: {sorted(set(MANIFESTS) - set(PROGRAMS))}, "
        f"unknown: {sorted(set(PROGRAMS) - set(MANIFESTS))}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("patch_id", sorted(MANIFESTS))
def test_the_smallest_program_gets_the_patch(patch_id, programs):
    if patch_id not in PROGRAMS:
        pytest.fail(f"no program for {patch_id!r} in PROGRAMS (tests/test_patch_reachability.py)")
    manifest = MANIFESTS[patch_id]
    affected = in_range(manifest.affected, transformers.__version__)
    for name in PROGRAMS[patch_id]:
        result = programs(name)
        if "skip" in result:
            assert not affected, f"{patch_id}: program {name!r} cannot be set up: {result['skip']}"
            continue
        state, reason = result["states"][patch_id]
        if affected:
            assert result["error"] is None, f"program {name!r}: {result['error']}"
            assert state == "applied", f"{patch_id} after program {name!r}: {state} ({reason})"
        else:
            assert state in ("forced", "drift"), f"{patch_id} (forced) after program {name!r}: {state} ({reason})"
