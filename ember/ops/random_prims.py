"""Counter-based random numbers computed on the device: Philox4x32-10, written once against `xp`.

Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11; the generator of
torch's and cuRAND's CUDA streams) maps a key of two 32-bit words and a counter of four to four
32-bit words that pass BigCrush. Being a pure function of (key, counter), it runs on any array
module with unsigned 64-bit arithmetic (NumPy, CuPy) and needs no state on the device.

Ember's layout (`Random`), as torch's CUDA generator (element index as the subsequence, offset):
    key     = (seed & 0xffffffff, seed >> 32)                  the generator's 64-bit seed
    counter = (j & 0xffffffff, j >> 32, offset & 0xffffffff, offset >> 32)     for block j = 0, 1, ...
Block j gives the words 4j .. 4j+3 of the draw, so words are numbered in row-major order of the
output and a draw of n elements that take `w` words each uses `blocks(dist, dtype, n) = ceil(n w / 4)`
blocks. The generator then advances its offset by that many, so consecutive draws never share a
counter (a draw uses offset o and the next offset o + its blocks >= o + 1). With the offset in the
counter's high words, the first two rounds see full arrays in only one or two words (the block
index; the offset words are one scalar per draw), which saves 12 of the 100 array operations.

Words per element and the maps from words to values:
    uniform   float16/bfloat16/float32: 1 word, its top 11/8/24 bits / 2**bits; float64: 2 words, 53 bits
    normal    Box-Muller on a pair of uniforms (u1 in (0, 1], u2 in [0, 1)) giving two normals; a pair
              is 2 words (computed in float32) or, for float64, 4 words (two 53-bit uniforms)
    bits      1 word (an int64 in [0, 2**32)) or 2 words (all 64 bits of an int64, `words=2`)
    permutation  of range(n): n random keys of 2 words, their low ceil(log2 n) bits replaced by the
              index, sorted. Keys whose other 64 - ceil(log2 n) bits tie keep index order: about
              n**2 / 2**(65 - log2 n) pairs (0.03 for n = 10**6), the only departure from uniform
    integers  [low, high): range r <= 2**32: one word x, (x * r) >> 32 (Lemire's multiply-shift);
              larger r: two words as a 64-bit x, x % r. The bias is below r / 2**32 (r / 2**64), the
              price of a fixed number of words per element (torch's kernels make the same trade)
    bernoulli 1 word x; x < round(p * 2**32) for a scalar p (`threshold`), or x / 2**32 < p for a
              tensor of probabilities given as the second input. `bits=16` (dropout's masks) takes
              each half of a word for one element, x < round(p * 2**16): p is then resolved to
              2**-16 (an error below 8e-6 in the kept fraction) for half the Philox work
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ..autograd.function import Primitive
from ..backends import array_module
from ._attr_types import DTYPE, SHAPE

__all__ = ["philox4x32", "Random", "blocks", "elements_per_block"]

M0, M1 = 0xD2511F53, 0xCD9E8D57       # Philox4x32 multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85       # key schedule (Weyl) increments: golden ratio, sqrt(3) - 1
ROUNDS = 10
_MASK = 0xFFFFFFFF

# Counters per piece on NumPy: a round is ten ufuncs, and on pieces of 2**14 counters their 128 KiB
# temporaries stay in the L2 cache (3.6 ns per word against 9 ns on 2**18 counters in one go).
# CuPy runs each ufunc as one kernel over the whole draw, so it gets one piece.
_PIECE = 1 << 14

_LITTLE = sys.byteorder == "little"   # where a uint64's low 16-bit halves are in a uint16 view

_UNIFORM_BITS = {2: 11, 4: 24}        # float16: 11, float32: 24 (by itemsize); bfloat16 below; float64: 53


def _mantissa_bits(dtype) -> int:
    if dtype.itemsize == 2 and dtype != np.float16:
        return 8                      # bfloat16
    return 53 if dtype.itemsize == 8 else _UNIFORM_BITS[dtype.itemsize]


def philox4x32(xp, k0, k1, c0, c1, c2, c3):
    """Philox4x32-10 of counters (c0, c1, c2, c3) under key (k0, k1), each word a uint64 array (or 0-d array
    or NumPy scalar, broadcast) holding a 32-bit value. Returns four uint64 arrays; the inputs are not modified.

    Rounds whose words are partly scalars (the draw's offset words, a zero word) are computed with
    broadcasting, which does those words' work once; once every word is a full array the rounds
    run in place on preallocated arrays, ten ufuncs a round and no allocation.
    """
    u = xp.uint64
    m0, m1, mask, s32 = u(M0), u(M1), u(_MASK), u(32)
    p0 = p1 = None
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + u(W0)) & mask
            k1 = (k1 + u(W1)) & mask
        if p0 is None and (r == 0 or not _all_full(c0, c1, c2, c3)):
            # (hi0, lo0) = M0 * c0, (hi1, lo1) = M1 * c2; new counter = (hi1^c1^k0, lo1, hi0^c3^k1, lo0),
            # the scalar words xored together first
            q0, q1 = c0 * m0, c2 * m1
            c0, c1, c2, c3 = (q1 >> s32) ^ (c1 ^ k0), q1 & mask, (q0 >> s32) ^ (c3 ^ k1), q0 & mask
            continue
        if p0 is None:   # the arrays of the last round are this call's own (not the caller's): reuse them
            p0, p1 = xp.empty_like(c0), xp.empty_like(c0)
        xp.multiply(c0, m0, out=p0)
        xp.multiply(c2, m1, out=p1)
        xp.right_shift(p1, s32, out=c0)
        xp.bitwise_xor(c0, c1, out=c0)
        xp.bitwise_xor(c0, k0, out=c0)
        xp.bitwise_and(p1, mask, out=c1)
        xp.right_shift(p0, s32, out=c2)
        xp.bitwise_xor(c2, c3, out=c2)
        xp.bitwise_xor(c2, k1, out=c2)
        xp.bitwise_and(p0, mask, out=c3)
    if p0 is None:   # fewer full words than rounds could fill: broadcast to a common shape
        c0, c1, c2, c3 = (xp.array(c, dtype=u) for c in xp.broadcast_arrays(c0, c1, c2, c3))
    return c0, c1, c2, c3


def _all_full(*words) -> bool:
    shape = words[0].shape if hasattr(words[0], "shape") else ()
    return all(getattr(w, "shape", ()) == shape and getattr(w, "ndim", 0) > 0 for w in words)


def elements_per_block(dist: str, dtype, words: int = 1, span: int = 0, bits: int = 32) -> int:
    """How many elements one block (four 32-bit words) gives."""
    if dist in ("uniform", "normal"):
        return 2 if dtype.itemsize == 8 else 4
    if dist == "bits":
        return 4 // words
    if dist == "permutation":
        return 2
    if dist == "integers":
        return 4 if span <= 1 << 32 else 2
    return 4 * (32 // bits)           # bernoulli: a 32-bit word per element, or two 16-bit halves


def blocks(dist: str, dtype, n: int, words: int = 1, span: int = 0, bits: int = 32) -> int:
    """Blocks (counters) a draw of n elements uses: what the generator's offset advances by."""
    return -(-n // elements_per_block(dist, np.dtype(dtype), words, span, bits))


class Random(Primitive):
    """Random values of `shape` and `dtype` from a (seed, offset) state tensor, on that tensor's device.

    Inputs: `state`, an int64 array [seed, offset] (the seed's 64 bits, two's complement), and for
    `dist='bernoulli'` optionally an array of probabilities of the output's shape.
    Attributes: `dist` ('uniform', 'normal', 'bits', 'integers', 'bernoulli', 'permutation'), `shape`,
    `dtype` (NumPy), and per distribution: `words` (bits), `low`, `span` (integers: values low + [0, span)),
    `threshold` (bernoulli with a scalar p: round(p * 2**bits)), `bits` (32, or 16 for a scalar p),
    `value` (bernoulli in a non-bool dtype: the value of a success, so dropout gets its scaled mask).
    """
    attrs = {"dist": str, "shape": SHAPE, "dtype": DTYPE, "words": int, "low": int, "span": int,
             "threshold": int, "bits": int, "value": float}
    differentiable = False
    keeps_dtype = False
    words = 1
    low = 0
    span = 0
    threshold = 0
    bits = 32
    value = 1.0

    def forward(self, state, prob=None):
        xp = array_module(state)
        dtype = np.dtype(self.dtype)
        n = math.prod(self.shape)
        epb = elements_per_block(self.dist, dtype, self.words, self.span, self.bits)
        nblocks = -(-n // epb)
        out = xp.empty((nblocks, epb), dtype=self._out_dtype(dtype))
        su = state.view(xp.uint64)
        mask, s32 = xp.uint64(_MASK), xp.uint64(32)
        k0, k1 = su[0] & mask, su[0] >> s32                  # the seed
        o0, o1 = su[1] & mask, su[1] >> s32                  # the offset
        piece = _PIECE if xp is np else max(nblocks, 1)
        flat_prob = None if prob is None else xp.ascontiguousarray(prob).reshape(-1)
        for start in range(0, nblocks, piece):
            stop = min(start + piece, nblocks)
            j = xp.arange(start, stop, dtype=xp.uint64)      # the blocks' indices in the draw
            jhi = xp.uint64(0) if stop <= 1 << 32 else j >> s32
            x = philox4x32(xp, k0, k1, j & mask if stop > 1 << 32 else j, jhi, o0, o1)
            p = None
            if flat_prob is not None:
                p = _padded(xp, flat_prob[start * epb:stop * epb], (stop - start) * epb).reshape(-1, epb)
            self._fill(xp, out[start:stop], x, dtype, p)
        out = out.reshape(-1)
        if out.size != n:
            out = out[:n]
        if self.dist == "permutation":
            out = _permutation(xp, out)
        elif self.dist == "bernoulli" and dtype != np.bool_:
            # one contiguous pass from the bool mask (casting stores into strided columns cost 2x)
            out = xp.multiply(out, dtype.type(self.value), dtype=dtype)
        return out.reshape(self.shape)

    def infer(self, state, prob=None):
        dtype = np.dtype(self.dtype)
        out = self._out_dtype(dtype)
        if self.dist == "bernoulli" and dtype != np.bool_:
            out = dtype
        return tuple(self.shape), np.dtype(out)

    def _out_dtype(self, dtype):
        if self.dist in ("bits", "integers", "permutation"):
            return np.int64
        return np.bool_ if self.dist == "bernoulli" else dtype

    def _fill(self, xp, out, x, dtype, prob):
        """Write the elements of one piece: out is (blocks, elements per block), x the four word arrays."""
        dist = self.dist
        if dist == "uniform":
            if dtype.itemsize == 8:
                out[:, 0] = _u53(xp, x[0], x[1])
                out[:, 1] = _u53(xp, x[2], x[3])
            else:
                bits = _mantissa_bits(dtype)
                for i in range(4):
                    out[:, i] = _ubits(xp, x[i], bits)
        elif dist == "normal":
            if dtype.itemsize == 8:
                one = np.float64(2.0 ** -53)
                _box_muller(xp, out[:, 0], out[:, 1], _u53(xp, x[0], x[1]) + one, _u53(xp, x[2], x[3]))
            else:
                # in float32 whatever the output dtype: 24-bit uniforms, so |z| < sqrt(2 ln 2**24) = 5.77,
                # as cuRAND's curand_normal
                one = np.float32(2.0 ** -24)
                for a in (0, 2):
                    _box_muller(xp, out[:, a], out[:, a + 1], _ubits(xp, x[a], 24) + one, _ubits(xp, x[a + 1], 24))
        elif dist in ("bits", "permutation"):
            if self.words == 1 and dist == "bits":
                for i in range(4):
                    out[:, i] = x[i].view(xp.int64)
            else:
                out[:, 0] = ((x[0] << xp.uint64(32)) | x[1]).view(xp.int64)
                out[:, 1] = ((x[2] << xp.uint64(32)) | x[3]).view(xp.int64)
        elif dist == "integers":
            low = xp.uint64(self.low % (1 << 64))
            if self.span <= 1 << 32:
                r = xp.uint64(self.span)
                for i in range(4):
                    out[:, i] = (((x[i] * r) >> xp.uint64(32)) + low).view(xp.int64)
            else:
                for col, (a, b) in enumerate(((x[0], x[1]), (x[2], x[3]))):
                    v = (a << xp.uint64(32)) | b
                    if self.span < 1 << 64:
                        v = v % xp.uint64(self.span)
                    out[:, col] = (v + low).view(xp.int64)
        elif dist == "bernoulli":       # out is bool
            if prob is None and self.bits == 16:
                # two elements a word, its low then its high 16 bits: a (blocks, 2) uint16 view of each
                # word compared in one ufunc straight into the two output columns
                if self.threshold >= 1 << 16:
                    out[...] = True
                    return
                t = xp.uint16(self.threshold)
                for i in range(4):
                    halves = x[i].view(xp.uint16).reshape(-1, 4)
                    xp.less(halves[:, 0:2] if _LITTLE else halves[:, 3:1:-1], t, out=out[:, 2 * i:2 * i + 2])
            elif prob is None:
                if self.threshold >= 1 << 32:
                    out[...] = True
                    return
                t = xp.uint64(self.threshold)
                for i in range(4):
                    xp.less(x[i], t, out=out[:, i])
            else:
                for i in range(4):
                    xp.less(x[i].view(xp.int64) * np.float64(2.0 ** -32), prob[:, i], out=out[:, i])
        else:
            raise ValueError(f"random: unknown distribution {dist!r}")


def _permutation(xp, keys):
    """The order of n random 64-bit keys: each key's low bits replaced by its index, the keys sorted
    (a value sort, about 4x faster than an argsort on NumPy), the indices read back from the low bits."""
    n = keys.shape[0]
    b = max(1, (n - 1).bit_length())
    k = keys.view(xp.uint64)
    k >>= xp.uint64(b)
    k <<= xp.uint64(b)
    k |= xp.arange(n, dtype=xp.uint64)
    k.sort()
    k &= xp.uint64((1 << b) - 1)
    return k.view(xp.int64)


def _padded(xp, a, n):
    """`a` extended with zeros to length n (the last block's elements past the output's end)."""
    if a.shape[0] == n:
        return a
    out = xp.zeros(n, dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


def _ubits(xp, w, bits):
    """The top `bits` bits of a 32-bit word as a float32 in [0, 1) (exact: bits <= 24)."""
    return (w >> xp.uint64(32 - bits)).view(xp.int64).astype(xp.float32) * xp.float32(2.0 ** -bits)


def _u53(xp, a, b):
    """53 bits of two 32-bit words as a float64 in [0, 1)."""
    v = ((a >> xp.uint64(5)) << xp.uint64(26)) | (b >> xp.uint64(6))
    return v.view(xp.int64).astype(xp.float64) * xp.float64(2.0 ** -53)


def _box_muller(xp, out0, out1, u1, u2):
    """Two independent standard normals from u1 in (0, 1] and u2 in [0, 1)."""
    r = xp.sqrt(xp.log(u1) * u1.dtype.type(-2.0))
    theta = u2 * u2.dtype.type(2 * math.pi)
    out0[...] = r * xp.cos(theta)
    out1[...] = r * xp.sin(theta)
