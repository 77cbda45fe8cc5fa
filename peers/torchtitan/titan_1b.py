"""A Llama-3.2-1B-shaped model for torchtitan 0.2.2, loaded with --experimental.custom_import titan_1b.

Registers the train spec ``llama3_1b``: torchtitan's own llama3 Transformer, training
recipe (parallelize_llama: per-block torch.compile, AC; AdamW; cross-entropy; HF
tokenizer; text dataloader), with the output projection tied to the token embedding
(Llama 3.2 1B ties them; torchtitan's llama3 does not) and these flavors:

* ``1B``: dim 2048, 16 layers, 32 heads, 8 KV heads (head_dim 64), FFN hidden 8192
  (2/3*4*2048 = 5461, *1.5 = 8192, multiple of 256), vocab 128256, rope theta 500000,
  tied embeddings: 1,235,814,400 parameters, as transformers' LlamaForCausalLM.
* ``1B_untied``: the same with a separate output projection (torchtitan's llama3 as is).
"""

import dataclasses

from torchtitan.models.llama3 import Transformer, TransformerModelArgs, get_train_spec
from torchtitan.models.llama3.model.args import RoPEScalingArgs
from torchtitan.protocols.train_spec import register_train_spec


@dataclasses.dataclass
class Llama1BArgs(TransformerModelArgs):
    tie_embeddings: bool = True


class TiedTransformer(Transformer):
    def __init__(self, model_args):
        super().__init__(model_args)
        if model_args.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight

    def init_weights(self, buffer_device=None):
        # to_empty() (meta -> GPU) gives each module its own new Parameter: tie again
        if self.model_args.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight
        super().init_weights(buffer_device=buffer_device)


_shape = dict(
    dim=2048,
    n_layers=16,
    n_heads=32,
    n_kv_heads=8,
    vocab_size=128256,
    ffn_dim_multiplier=1.5,
    multiple_of=256,
    rope_theta=500000,
    rope_scaling_args=RoPEScalingArgs(scaling_factor=32.0),
)

_spec = dataclasses.replace(
    get_train_spec(),
    model_cls=TiedTransformer,
    model_args={
        "1B": Llama1BArgs(**_shape, tie_embeddings=True),
        "1B_untied": Llama1BArgs(**_shape, tie_embeddings=False),
    },
)
register_train_spec("llama3_1b", _spec)
