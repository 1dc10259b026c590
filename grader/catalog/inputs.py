"""Seeded inputs of the cases: numbers, parameter bundles and texts. Every helper draws from the
torch.Generator it is given, so a case list is a function of its seed (the secret one included)."""
from __future__ import annotations

import torch

# The transformer's parameter makers are shared with the capstone's training in the child, so
# they live in the trusted package (randn with them); the parent uses them from here.
from grader.sandbox.trusted.params import (ffn_params, layer_params, ln_params, mha_params,  # noqa: F401
                                           model_params, randn)

F32 = torch.float32


# ----------------------------------------------------------------------------- numbers
def uniform(gen: torch.Generator, *shape: int, low: float = -1.0, high: float = 1.0,
            dtype: torch.dtype = F32) -> torch.Tensor:
    return (torch.rand(*shape, generator=gen, dtype=torch.float64) * (high - low) + low).to(dtype)


def randint(gen: torch.Generator, low: int, high: int, *shape: int) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=gen, dtype=torch.int64)


def scaled(gen: torch.Generator, *shape: int, scale: float, dtype=F32) -> torch.Tensor:
    return randn(gen, *shape, dtype=dtype, scale=scale)


# ----------------------------------------------------------------------------- layers
def layer_list(gen: torch.Generator, sizes, dtype=F32, scale: float = 1.0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A list of (W, b) for consecutive sizes: the shape of an MLP's params, grads, velocity, m and v."""
    return [(randn(gen, d_in, d_out, dtype=dtype, scale=scale), randn(gen, d_out, dtype=dtype, scale=scale))
            for d_in, d_out in zip(sizes[:-1], sizes[1:])]


def zeros_like_layers(params) -> list[tuple[torch.Tensor, ...]]:
    return [tuple(torch.zeros_like(t) for t in layer) for layer in params]


# ----------------------------------------------------------------------------- recurrent cells
def gate_params(gen: torch.Generator, d: int, h: int, gates: str, dtype=F32, w_scale: float | None = None,
                biases: tuple[str, ...] | None = None) -> dict[str, torch.Tensor]:
    """W_x<g> (d, h), W_h<g> (h, h) for each gate letter and the biases (default b_<g> per gate);
    weights of size ~1/sqrt(h), as PyTorch initialises recurrent layers, so states neither die
    nor saturate at once."""
    s = w_scale if w_scale is not None else 1.0 / h ** 0.5
    p = {}
    for g in gates:
        p[f"W_x{g}"] = scaled(gen, d, h, scale=s, dtype=dtype)
        p[f"W_h{g}"] = scaled(gen, h, h, scale=s, dtype=dtype)
    for name in biases if biases is not None else [f"b_{g}" for g in gates]:
        p[name] = scaled(gen, h, scale=0.5, dtype=dtype)
    return p


# ----------------------------------------------------------------------------- texts (tokens chapter)
CLASSIC = ("low low low low low lower lower newest newest newest newest newest newest "
           "widest widest widest")             # the example of Sennrich et al. (2016)
TIES = "mn ab zy mn ab zy qp qp"                # every pair twice: only the tie rule decides
UNICODE = "naïve café résumé — 東京 東京の夜 😀😀 façade déjà vu café"
# Whitespace is the six ASCII bytes: str.split() cuts words at U+2003, U+00A0, U+0085 and U+3000 too,
# and a byte-as-Latin-1 reading cuts the à (bytes C3 A0) in two; neither may here.
WIDE_SPACES = "x\u2003y x\u2003y x\u2003y \u00e0 \u00e0 voil\u00e0\u00a0voil\u00e0\u0085 \u3000"
SYLLABLES = ("ka ri to na me su lo pe vi da ne ru mo sa ti ko la fe gu ba shi ze yo wa "
             "cho ex an on er st th in re ou").split()


def synthetic_text(gen: torch.Generator, n_words: int, vocab: int) -> str:
    """A made-up language: `vocab` words of 1-4 syllables, drawn with Zipf-like frequencies."""
    lengths = torch.randint(1, 5, (vocab,), generator=gen)
    syll = torch.randint(0, len(SYLLABLES), (vocab, 4), generator=gen)
    words = ["".join(SYLLABLES[s] for s in syll[k, :lengths[k]].tolist()) for k in range(vocab)]
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    picks = torch.multinomial(weights, n_words, replacement=True, generator=gen).tolist()
    seps = torch.randint(0, 12, (n_words,), generator=gen).tolist()
    out = []
    for k, s in zip(picks, seps):
        out.append(words[k])
        out.append("\n" if s == 0 else ", " if s == 1 else " ")
    return "".join(out)


def random_letters(gen: torch.Generator, n_words: int, letters: str = "abcde") -> str:
    lengths = torch.randint(1, 9, (n_words,), generator=gen).tolist()
    return " ".join("".join(letters[i] for i in torch.randint(0, len(letters), (n,), generator=gen).tolist())
                    for n in lengths)
