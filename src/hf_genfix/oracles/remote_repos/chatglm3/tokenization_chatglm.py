from typing import Dict, List, Optional, Union

from transformers import PreTrainedTokenizer
from transformers.tokenization_utils_base import BatchEncoding, EncodedInput
from transformers.utils import PaddingStrategy

_SPECIAL = ("<pad>", "<unk>", "</s>", "[gMASK]", "sop")
_CHARS = "abcdefghijklmnopqrstuvwxyz "


class ChatGLMTokenizer(PreTrainedTokenizer):
    vocab_files_names = {}
    model_input_names = ["input_ids", "attention_mask", "position_ids"]

    def __init__(self, padding_side="left", clean_up_tokenization_spaces=False, **kwargs):
        self.vocab = {token: i for i, token in enumerate(_SPECIAL + tuple(_CHARS))}
        self.ids = {i: token for token, i in self.vocab.items()}
        super().__init__(padding_side=padding_side, clean_up_tokenization_spaces=clean_up_tokenization_spaces,
                         pad_token="<pad>", unk_token="<unk>", eos_token="</s>", **kwargs)

    @property
    def vocab_size(self):
        return len(self.vocab)

    def get_vocab(self):
        return dict(self.vocab)

    def _tokenize(self, text, **kwargs):
        return [c for c in text.lower() if c in _CHARS]

    def _convert_token_to_id(self, token):
        return self.vocab.get(token, 1)

    def _convert_id_to_token(self, index):
        return self.ids.get(index, "<unk>")

    def convert_tokens_to_string(self, tokens):
        return "".join(t for t in tokens if t not in _SPECIAL)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()

    def get_prefix_tokens(self):
        return [self.vocab["[gMASK]"], self.vocab["sop"]]

    def build_inputs_with_special_tokens(self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None):
        ids = self.get_prefix_tokens() + token_ids_0
        if token_ids_1 is not None:
            ids = ids + token_ids_1 + [self.eos_token_id]
        return ids

    def _pad(
        self,
        encoded_inputs: Union[Dict[str, EncodedInput], BatchEncoding],
        max_length: Optional[int] = None,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        pad_to_multiple_of: Optional[int] = None,
        return_attention_mask: Optional[bool] = None,
    ) -> dict:
        assert self.padding_side == "left"
        required_input = encoded_inputs[self.model_input_names[0]]
        seq_length = len(required_input)
        if padding_strategy == PaddingStrategy.LONGEST:
            max_length = len(required_input)
        if max_length is not None and pad_to_multiple_of is not None and (max_length % pad_to_multiple_of != 0):
            max_length = ((max_length // pad_to_multiple_of) + 1) * pad_to_multiple_of
        needs_to_be_padded = padding_strategy != PaddingStrategy.DO_NOT_PAD and len(required_input) != max_length
        if "attention_mask" not in encoded_inputs:
            encoded_inputs["attention_mask"] = [1] * seq_length
        if "position_ids" not in encoded_inputs:
            encoded_inputs["position_ids"] = list(range(seq_length))
        if needs_to_be_padded:
            difference = max_length - len(required_input)
            encoded_inputs["attention_mask"] = [0] * difference + encoded_inputs["attention_mask"]
            encoded_inputs["position_ids"] = [0] * difference + encoded_inputs["position_ids"]
            encoded_inputs[self.model_input_names[0]] = [self.pad_token_id] * difference + required_input
        return encoded_inputs
