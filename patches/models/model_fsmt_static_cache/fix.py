"""model-fsmt-static-cache: FSMT with ``cache_implementation="static"`` attends to the static cache's unfilled zero
slots from the first generated token on (silently wrong).

The defect. ``FSMTModel.forward`` builds the decoder's causal and padding masks only when ``use_cache`` is off (``if
not use_cache``); with a cache it passes none, which a dynamic cache can afford for one new token a step. A static
cache holds ``max_cache_len`` slots from the first step, the unwritten ones zeros, and with no mask the new token
weights them all (a logit difference of about 0.005 on a tiny model from step 0). Measured wrong on 4.56.0-5.24.0
(4.54-4.55 refuse a static cache for FSMT; before, the request does not reach its attention). Below 5.18.0 the
decoder also embeds every fed token at the first position (``model-fsmt-cached-positions``, which corrects it);
masking alone would move the logits from upstream's 0.0074 to 0.116, so below 5.18.0 the mask is passed only while
that patch is in effect for the call, and otherwise the static case raises.

Detection. ``doctor --sweep``'s s2s-static-cache scenario on a tiny FSMT: a padded encoder batch, 5 greedy tokens
with a static cache, every row and step against a no-cache forward of that row alone.

Correction. FSMT's ``DecoderLayer.forward`` is wrapped: when upstream passes no ``causal_mask`` and the layer's
self-attention cache is a static one, it passes the additive mask that hides the slots past the tokens written so
far (``fixes.models._static_self_attention``): exactly the keys the dynamic cache would hold. A mask upstream builds, a
dynamic cache or no cache go to upstream untouched. Where the release's static layer does not say where it writes
(FSMT hands it no ``cache_position``), it raises a clear error before the first token instead of a guess.
"""

from __future__ import annotations

from hf_genfix._patches.models.shared import static_self_attention as static

PATCH = "model-fsmt-static-cache"
TARGET = "transformers.models.fsmt.modeling_fsmt:DecoderLayer.forward"


def _positions_wrong() -> str:
    """Below 5.18.0 the decoder also embeds every fed token at the first position; masking is right only with
    ``model-fsmt-cached-positions`` correcting that in this call (else the mask alone would trade one wrong answer,
    0.0074, for another, 0.116): refuse then."""
    import transformers
    from hf_genfix._patches.models.shared.fsmt_positions import in_effect
    from packaging.version import Version

    if Version(Version(transformers.__version__).base_version) >= Version("5.18.0") or in_effect():
        return ""
    return ("the decoder also embeds every fed token at the first position, which model-fsmt-cached-positions "
            "corrects but is off here (HF_GENFIX_MODEL_FSMT_CACHED_POSITIONS)")


install = static.installer(PATCH, "fsmt", TARGET, "causal_mask", batch_first=False, refuse=_positions_wrong)
