from transformers import PreTrainedTokenizer

_CHARS = "abcdefghijklmnopqrstuvwxyz "
_EOD = "<|endoftext|>"


class PlainTokenizer(PreTrainedTokenizer):
    vocab_files_names = {}

    def __init__(self, errors="replace", **kwargs):
        self.vocab = {token: i for i, token in enumerate(tuple(_CHARS) + (_EOD,))}
        self.ids = {i: token for token, i in self.vocab.items()}
        self.errors = errors
        super().__init__(**kwargs)

    @property
    def vocab_size(self):
        return len(self.vocab)

    def get_vocab(self):
        return dict(self.vocab)

    def _tokenize(self, text, **kwargs):
        return [c for c in text.lower() if c in _CHARS]

    def _convert_token_to_id(self, token):
        return self.vocab[token]

    def _convert_id_to_token(self, index):
        return self.ids[index]

    def convert_tokens_to_string(self, tokens):
        return "".join(t for t in tokens if t != _EOD)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()
