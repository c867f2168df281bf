"""Position encodings of `TinyDecoder`: sinusoidal embeddings and rotary embeddings (RoPE).

Used in notebooks 06 and 07 (through ``course.model``).
"""

from __future__ import annotations

import math

import torch


def sinusoidal_positions(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Return the sinusoidal position embeddings of ``positions`` (Vaswani et al., 2017).

    Args:
        positions: 1-D integer tensor of absolute positions.
        dim: the embedding width (any int >= 1; an odd width drops the last cosine).

    Returns:
        A float32 tensor ``[len(positions), dim]`` on the positions' device. Row ``p`` depends on
        ``p`` only, so a token at position 100 gets the same embedding whether it is computed in
        one call or after 100 tokens of reused K/V.

    Used in notebook 06 (by `TinyDecoder`).
    """
    half = (dim + 1) // 2
    frequencies = torch.exp(
        -math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=positions.device) / half
    )
    angles = positions.to(torch.float32)[:, None] * frequencies[None, :]
    embedding = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).reshape(len(positions), 2 * half)
    return embedding[:, :dim]


def rotate(tensor: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotate queries or keys ``[..., num_tokens, num_heads, head_dim]`` by their positions (RoPE).

    Rotary position embedding (Su et al., 2021, "RoFormer"), in the split-halves layout of
    GPT-NeoX and Llama: feature ``i`` and feature ``i + head_dim / 2`` of every head are turned
    by the angle ``position * 10000 ** (-2 i / head_dim)``. The dot product of a query rotated
    to position ``p`` and a key rotated to position ``s`` then depends on ``p - s`` only.
    ``positions`` is a 1-D integer tensor ``[num_tokens]``; ``head_dim`` must be even.

    Used by `TinyDecoder` with ``positions="rotary"`` (notebook 07).
    """
    half = tensor.shape[-1] // 2
    frequencies = torch.exp(
        -math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=tensor.device) / half
    )
    angles = positions.to(torch.float32)[:, None] * frequencies[None, :]
    cos, sin = torch.cos(angles)[:, None, :], torch.sin(angles)[:, None, :]
    first, second = tensor[..., :half], tensor[..., half:]
    return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)

