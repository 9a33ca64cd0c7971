"""A small byte-level BPE tokenizer built on the fly, with special tokens and a chat template.

The tokenizer is trained with the ``tokenizers`` library on a short built-in corpus, then padded with reserved
special tokens to exactly :data:`VOCAB_SIZE` entries, so that every tiny model (whose ``vocab_size`` is the same
number) can embed every id it produces. Byte-level pre-tokenization makes ``decode(encode(text)) == text`` hold for
any text. Nothing is downloaded; the result is the same in every process.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

__all__ = [
    "BOS_TOKEN_ID",
    "CHAT_TEMPLATE",
    "EOS_TOKEN_ID",
    "PAD_TOKEN_ID",
    "RESERVED_TOKEN_IDS",
    "SPECIAL_TOKENS",
    "UNK_TOKEN_ID",
    "VOCAB_SIZE",
    "tiny_tokenizer",
    "tokenizer_fingerprint",
]

#: Size of the vocabulary, equal to the ``vocab_size`` of every tiny config.
VOCAB_SIZE = 1024

#: Named special tokens, at ids 0, 1, 2, ... in this order. ``<|im_end|>`` ends a chat turn and is the EOS token.
SPECIAL_TOKENS: dict[str, str] = {
    "pad_token": "<pad>",
    "bos_token": "<s>",
    "eos_token": "<|im_end|>",
    "unk_token": "<unk>",
    "im_start": "<|im_start|>",
}
PAD_TOKEN_ID, BOS_TOKEN_ID, EOS_TOKEN_ID, UNK_TOKEN_ID = 0, 1, 2, 3

#: Ids at the top of the vocabulary kept free for model-specific special tokens (image, audio, mask tokens...).
RESERVED_TOKEN_IDS: tuple[int, ...] = tuple(range(VOCAB_SIZE - 1, VOCAB_SIZE - 33, -1))

#: ChatML-style template; the ``{% generation %}`` block marks assistant tokens (``return_assistant_tokens_mask``).
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' -%}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{%- else -%}"
    "{{ message['content'] + '<|im_end|>' }}"
    "{%- endif -%}"
    "{{ '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

_CORPUS = (
    "The quick brown fox jumps over the lazy dog. A tiny model learns nothing, but it runs everywhere.",
    "Transformers turn tokens into vectors, mix them with attention, and predict the next token.",
    "def forward(self, input_ids, attention_mask=None):\n    return self.lm_head(self.model(input_ids))\n",
    "for step, batch in enumerate(loader):\n    loss = model(**batch).loss\n    loss.backward()\n",
    "User: What is the capital of France?\nAssistant: The capital of France is Paris.",
    "User: How many legs does a spider have?\nAssistant: A spider has eight legs.",
    "Trainium is a machine learning accelerator. Each device has several NeuronCores.",
    "import torch\nx = torch.randn(2, 3, device='neuron')\nprint(x.sum().item())\n",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 100 1000 2024 3.14 -1 +1 = == != <= >= ( ) [ ] { } : ; , .",
    "Hello, world! Hello again; hello once more? Good morning, good evening and good night.",
    "The rain in Spain stays mainly in the plain. She sells sea shells by the sea shore.",
    "Mixture of experts routes each token to a few experts; state space models scan a sequence in time.",
    "Rotary position embeddings rotate queries and keys; sliding window attention looks at recent tokens.",
    "Gradient descent updates parameters against the gradient of the loss, one small step at a time.",
    "Le renard brun saute par-dessus le chien paresseux. Der schnelle Fuchs springt über den Hund.",
    "Ünïcödé tëxt, emoji 🙂 and symbols © ® ™ € £ ¥ are all bytes to a byte-level tokenizer.",
)


@functools.lru_cache(maxsize=1)
def _trained_json() -> str:
    """Train the BPE model once per process; return the tokenizer as JSON (copied by every caller)."""
    tokenizer = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk_token"]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(RESERVED_TOKEN_IDS),
        special_tokens=list(SPECIAL_TOKENS.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 4, trainer=trainer)
    filler = VOCAB_SIZE - tokenizer.get_vocab_size(with_added_tokens=True)
    tokenizer.add_special_tokens([f"<|reserved_{i}|>" for i in range(filler)])
    if tokenizer.get_vocab_size(with_added_tokens=True) != VOCAB_SIZE:
        raise RuntimeError(f"tiny tokenizer has {tokenizer.get_vocab_size()} tokens, expected {VOCAB_SIZE}")
    return tokenizer.to_str()


def _renamed(named: Mapping[int, str]) -> str:
    """The trained tokenizer's JSON with the reserved tokens at the keys of ``named`` renamed to its values."""
    unknown = sorted(set(named) - set(RESERVED_TOKEN_IDS))
    if unknown:
        raise ValueError(f"only reserved ids can be renamed ({RESERVED_TOKEN_IDS[-1]}..{RESERVED_TOKEN_IDS[0]}), "
                         f"got {unknown}")
    if len(set(named.values())) != len(named):
        raise ValueError(f"two reserved ids would get the same name: {dict(named)}")
    document = json.loads(_trained_json())
    taken = {token["content"] for token in document["added_tokens"] if token["id"] not in named}
    clashes = sorted(set(named.values()) & (taken | set(document["model"]["vocab"])))
    if clashes:
        raise ValueError(f"tokens {clashes} are already in the tiny vocabulary")
    for token in document["added_tokens"]:
        if token["id"] in named:
            token["content"] = named[token["id"]]
    return json.dumps(document)


def tiny_tokenizer(named: Mapping[int, str] | None = None,
                   attributes: Mapping[str, str] | None = None) -> PreTrainedTokenizerFast:
    """A fresh :class:`~transformers.PreTrainedTokenizerFast` of :data:`VOCAB_SIZE` tokens with a chat template.

    ``named`` renames reserved special tokens (id -> text), e.g. ``{1023: "<image>"}``, so that a processor's
    special tokens have the ids the tiny model's config gives them; ``attributes`` names special tokens as the
    tokenizer's own attributes (``{"image_token": "<image>"}``: ``tokenizer.image_token`` and ``image_token_id``, saved
    with it), as a vision-language checkpoint's tokenizer declares those its processor reads."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_renamed(named) if named else _trained_json()),
        pad_token=SPECIAL_TOKENS["pad_token"],
        bos_token=SPECIAL_TOKENS["bos_token"],
        eos_token=SPECIAL_TOKENS["eos_token"],
        unk_token=SPECIAL_TOKENS["unk_token"],
        additional_special_tokens=[SPECIAL_TOKENS["im_start"]],
        chat_template=CHAT_TEMPLATE,
        model_max_length=512,
        clean_up_tokenization_spaces=False,
        **({"model_specific_special_tokens": dict(attributes)} if attributes else {}),
    )


def tokenizer_fingerprint() -> str:
    """A hash of the trained tokenizer: it changes whenever the vocabulary, merges or specials do."""
    return hashlib.sha256(_trained_json().encode()).hexdigest()
