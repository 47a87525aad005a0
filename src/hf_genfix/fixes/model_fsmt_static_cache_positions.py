"""model-fsmt-static-cache-positions: FSMT with ``cache_implementation="static"`` on 5.0.0-5.17.0 attends to the
static cache's unfilled zero slots and places every generated token at the first position (silently wrong); hf_genfix
refuses it with a clear error.

The defect. As in ``model-fsmt-static-cache`` (5.18.0 on), ``FSMTModel.forward`` passes the decoder no causal mask
when ``use_cache`` is on, so the new token weights the static cache's unwritten zero slots. Before 5.18.0 the
decoder also takes its positions from the ids it is fed (``embed_positions(input_ids)``), and with a static cache
generate() feeds one token a step: every step is embedded at the first position. Masking the slots alone moves the
logits further from the oracle (0.116-0.126 instead of 0.005-0.007 on a tiny model), so no partial correction is
installed. Measured wrong (0.0074 on 5.0.0, 5.1.0, 5.4.0, 5.5.0, 5.12.1; 0.00473 on 5.13.0, 5.17.0); 4.x keeps no
static cache for FSMT in the sweep's build.

Detection. ``doctor --sweep``'s s2s-static-cache scenario on a tiny FSMT: a padded encoder batch, greedy tokens with
a static cache, every row and step against a no-cache forward of that row alone.

Correction, loud. FSMT's ``DecoderLayer.forward`` is wrapped: when its self-attention cache is a static one, it raises
``StaticCacheUnsupported`` (naming the model type, the release, this patch and ``HF_GENFIX_..._POSITIONS=off``,
suggesting the dynamic cache) before the first token. The dynamic cache and uncached generation are upstream's.
"""

from __future__ import annotations

from hf_genfix.fixes import _static_self_attention as static

PATCH = "model-fsmt-static-cache-positions"
TARGET = "transformers.models.fsmt.modeling_fsmt:DecoderLayer.forward"

install = static.installer(PATCH, "fsmt", TARGET, "causal_mask", batch_first=False,
                           refuse="the decoder also embeds every fed token at the first position (its positions "
                                  "come from the one token fed a step), which a mask cannot correct")
probe = static.prober("fsmt")
