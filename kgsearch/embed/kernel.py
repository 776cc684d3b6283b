"""The dense kernels, in numpy: int8 quantisation, exact scans, and 1-bit sign sketches.

**Quantisation** (:func:`quantize`): vectors are L2-normalised, rotated by a random orthogonal
matrix (:func:`make_rotation`, stored once per index, so no numpy-version dependence) which
spreads the PCA-skewed coordinates evenly, rounded to int8 at ``max|x| / 127`` and given the
least-squares scale ``<x, c> / <c, c>``. Scores are ``scale * (codes @ (R q))`` ~ cosine. On
real sentence embeddings this keeps recall@10 against float32 above 0.99 (plain per-vector
int8: ~0.98).

**Exact scans** (:func:`scan_scores`, :func:`row_scores`, :func:`topk`): 512-row slices of
int8 codes are converted to a reused float64 buffer (cache-resident) and multiplied: less
memory traffic than a float32 matrix, one BLAS thread, and a row's score does not depend on
where the row sits (an index updated in place scores like a fresh build).

**Sign sketches** (issue 16, item 1). A sketch keeps one bit per dimension of the *rotated*
vector (the sign of its int8 code: ``codes > 0``), 32 bytes per 256-dim vector (30.5 MiB at
1M). A query

1. scores every sketch against the query with popcounts (no float work per vector):
   * ``hamming``: bits of the query's signs XOR the sketch, popcount; lower is closer;
   * ``asym`` (asymmetric, RaBitQ-style): the query keeps ``planes`` bits per dimension
     (``q' = round((q - lo) / step)`` in ``0 .. 2^planes - 1`` with ``lo <= 0 <= hi``, bit-plane
     ``k`` holds bit ``k`` of every ``q'_d``) and the score is
     ``sum_k 2^k popcount(plane_k & b) - z * popcount(b)`` = ``<q' - z, b>`` with ``z`` the
     rounded zero, which ranks like ``<q, b>`` (so like ``<q, 2b - 1>``, the query against the
     sign vector) up to the rounding of ``q``; higher is closer. ~5x Hamming's work per row;
   * ``cascade`` (what the dense channel runs): Hamming over every sketch keeps ``n_first``,
     the asymmetric score keeps ``n_cand`` of those;
2. keeps the ``n_cand`` best by that integer score (:func:`select_best`: a histogram of the
   score values finds the cut, no sort or argpartition of the whole array; ties at the cut
   are all kept);
3. the caller rescores the short list exactly with the int8 codes (:func:`scan_scores`).

Measured on the scaling corpus (docs/scale-study.md, section B): at 1M vectors the cascade
8000 -> 1000 keeps recall@10 0.976 against exact float search (the full int8 scan: 0.988) for
~12 ms CPU a query. :func:`moments` / :func:`score_stats` give the exact mean and spread of
the dense scores over the whole index (what z-normalisation needs) without a scan.

Sketches are stored column-major, ``(d // 64, n)`` uint64 (one contiguous row per 64-bit
word), so every pass is a few 1-D numpy operations over contiguous memory, done in blocks of
64K vectors. Popcounts use ``np.bitwise_count`` (numpy >= 2.0), or a 16-bit lookup table
(numpy 1.x, e.g. an older Termux package); both give identical integers.
:func:`hamming_ref` / :func:`asym_ref` are the slow references (Python ints, one vector at a
time) the tests compare the kernels with.
"""
from __future__ import annotations

import numpy as np

__all__ = ["make_rotation", "quantize", "topk", "scan_scores", "row_scores", "SLICE",
           "sketch_codes", "sketch_query", "query_planes", "hamming", "asym_scores", "select_best", "nearest_hamming",
           "candidates", "hamming_ref", "asym_ref", "popcount_words", "moments", "score_stats"]

SLICE = 512                      # rows converted to float64 at a time during a scan


# ---------------------------------------------------------------------------- int8 codes
def make_rotation(dims: int, seed: int = 0):
    """A random orthogonal ``dims x dims`` float32 matrix (QR of a seeded Gaussian)."""
    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.standard_normal((dims, dims)))
    q *= np.sign(np.diag(r))[None, :]
    return np.ascontiguousarray(q, dtype=np.float32)


def quantize(vecs, rotation):
    """float vectors ``(n, d)`` -> (int8 codes ``(n, d)``, float32 scales ``(n,)``).

    Zero vectors get zero codes and scale 0.
    """
    # float64 throughout: a float32 matrix product gave a vector a code or scale one bit apart
    # depending on how many others were embedded in the same batch (BLAS picks its kernel by
    # shape), so an index updated in place scored nodes 1e-8 apart from a fresh build (issue
    # 13). In float64 such differences are ~1e-16, far below one float32 step of the scale.
    x = np.asarray(vecs, dtype=np.float32).astype(np.float64)
    norms = np.sqrt((x * x).sum(axis=1))
    nz = norms > 0
    x = np.where(nz[:, None], x / np.where(nz, norms, 1)[:, None], 0)
    xr = x @ np.asarray(rotation, dtype=np.float64).T
    m = np.abs(xr).max(axis=1) if len(xr) else np.zeros(0, np.float64)
    step = np.where(m > 0, m / 127.0, 1.0)
    codes = np.clip(np.rint(xr / step[:, None]), -127, 127).astype(np.int8)
    c = codes.astype(np.float64)
    cc = (c * c).sum(axis=1)
    scales = np.where(cc > 0, (xr * c).sum(axis=1) / np.maximum(cc, 1e-30), 0).astype(np.float32)
    return codes, scales


def topk(scores, ids, k: int):
    """Best ``k`` (ids, scores): highest score first, ties broken by the smaller node id."""
    n = len(scores)
    if n == 0 or k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    if n > k:
        part = np.argpartition(-scores, k - 1)[:k]
        cand = np.flatnonzero(scores >= scores[part].min())
    else:
        cand = np.arange(n)
    order = np.lexsort((ids[cand], -scores[cand]))[:k]
    sel = cand[order]
    return ids[sel].astype(np.int64), scores[sel].astype(np.float32)


def scan_scores(codes, scales, qr):
    """``codes @ qr * scales`` for every row, in float64 (float64 scores; see :func:`row_scores`)."""
    n, d = codes.shape
    out = np.empty(n, dtype=np.float64)
    q = np.asarray(qr, dtype=np.float64)
    buf = np.empty((min(SLICE, max(n, 1)), d), dtype=np.float64)
    for s in range(0, n, SLICE):
        e = min(n, s + SLICE)
        b = buf[:e - s]
        np.copyto(b, codes[s:e], casting="unsafe")
        np.dot(b, q, out=out[s:e])
    np.multiply(out, scales, out=out)
    return out


def row_scores(codes, scales, qr):
    """The same scores for a few rows. In float64 a row's score does not depend on where the
    row sits in the matrix (float32 BLAS results differed in the last bit with the row's
    position, so an index updated in place, whose rows are in another order, scored a node
    1e-8 apart from a fresh build, issue 13)."""
    return (np.asarray(codes, dtype=np.float64) @ np.asarray(qr, dtype=np.float64)) * scales



# ---------------------------------------------------------------------------- sign sketches
_LUT16: np.ndarray | None = None


def _lut16() -> np.ndarray:
    global _LUT16
    if _LUT16 is None:
        v = np.arange(1 << 16, dtype=np.uint32)
        c = np.zeros(1 << 16, dtype=np.uint8)
        for b in range(16):
            c += ((v >> b) & 1).astype(np.uint8)
        _LUT16 = c
    return _LUT16


def popcount_words(x: np.ndarray, use_lut: bool | None = None) -> np.ndarray:
    """Bits set in each uint64 of ``x`` (uint8 result, same shape)."""
    x = np.asarray(x, dtype=np.uint64)
    if use_lut is None:
        use_lut = not hasattr(np, "bitwise_count")
    if not use_lut:
        return np.bitwise_count(x)
    c = _lut16()[np.ascontiguousarray(x).reshape(-1).view(np.uint16)]      # 4 halves per word
    out = c[0::4] + c[1::4]
    out += c[2::4]
    out += c[3::4]
    return out.reshape(x.shape)


def sketch_codes(codes: np.ndarray) -> np.ndarray:
    """int8 codes ``(n, d)`` (d a multiple of 64) -> sketches ``(d // 64, n)`` uint64, one row
    per 64-dimension word (column-major: a scan reads each word row contiguously, ~4x faster
    than ``(n, words)`` rows at 1M vectors). Bit ``b`` of word ``j`` of vector ``i`` is 1 when
    ``codes[i, 64 * j + b] > 0``."""
    codes = np.asarray(codes)
    n, d = codes.shape
    if d % 64:
        raise ValueError(f"sketch dims must be a multiple of 64, got {d}")
    bits = np.packbits(codes > 0, axis=1, bitorder="little")          # (n, d/8) uint8
    return np.ascontiguousarray(np.ascontiguousarray(bits).view("<u8").reshape(n, d // 64).T)


def sketch_query(qr: np.ndarray) -> np.ndarray:
    """The query's sign bits as words ``(d // 64,)`` uint64."""
    return sketch_codes(np.asarray(qr, dtype=np.float32)[None, :])[:, 0]


def query_planes(qr: np.ndarray, planes: int = 4) -> tuple[np.ndarray, int]:
    """The query rounded to ``planes`` unsigned bits: its bit-planes ``(planes, d // 64)`` uint64
    and the zero point ``z`` (the rounded value of 0), so that ``<q' - z, b>`` ~ ``<q, b> / step``."""
    q = np.asarray(qr, dtype=np.float64)
    lo, hi = min(float(q.min()), 0.0), max(float(q.max()), 0.0)
    top = (1 << planes) - 1
    step = (hi - lo) / top if hi > lo else 1.0
    qi = np.clip(np.rint((q - lo) / step), 0, top).astype(np.int64)
    zero = int(np.clip(np.rint(-lo / step), 0, top))
    out = np.empty((planes, len(q) // 64), dtype=np.uint64)
    for k in range(planes):
        out[k] = sketch_codes(((qi >> k) & 1).astype(np.int8)[None, :])[:, 0]
    return out, zero


def _count(x: np.ndarray, use_lut: bool | None) -> np.ndarray:
    """Popcount of a 1-D uint64 array as uint16."""
    return popcount_words(x, use_lut).astype(np.uint16)


def hamming(sk: np.ndarray, qs: np.ndarray, use_lut: bool | None = None, block: int = 65536) -> np.ndarray:
    """Hamming distance of every sketch (column of ``sk``) to the query words (uint16, ``(n,)``).
    Works in blocks of ``block`` vectors with reused buffers (cache-sized temporaries)."""
    w, n = sk.shape
    out = np.empty(n, dtype=np.uint16)
    if use_lut is None:
        use_lut = not hasattr(np, "bitwise_count")
    x = np.empty(min(block, max(n, 1)), dtype=np.uint64)
    c = np.empty(len(x), dtype=np.uint8)
    for s in range(0, n, block):
        e = min(n, s + block)
        m = e - s
        o = out[s:e]
        for j in range(w):
            np.bitwise_xor(sk[j, s:e], qs[j], out=x[:m])
            if use_lut:
                c[:m] = popcount_words(x[:m], True)
            else:
                np.bitwise_count(x[:m], out=c[:m])
            if j == 0:
                np.copyto(o, c[:m])
            else:
                np.add(o, c[:m], out=o)
    return out


def asym_scores(sk: np.ndarray, qp, use_lut: bool | None = None) -> np.ndarray:
    """``<q' - z, b>`` for every sketch (int32, ``(n,)``; higher = closer), ``qp`` from
    :func:`query_planes`. The zero point matters: without it a row with more 1 bits scores
    higher whatever the query. About ``planes + 1`` times the work of :func:`hamming`."""
    planes, zero = qp
    w, n = sk.shape
    acc = np.zeros(n, dtype=np.int32)
    for k in range(planes.shape[0]):
        part = np.zeros(n, dtype=np.int32)
        for j in range(w):
            part += _count(np.bitwise_and(sk[j], planes[k, j]), use_lut)
        acc += part << k if k else part
    if zero:
        ones = np.zeros(n, dtype=np.int32)
        for j in range(w):
            ones += _count(sk[j], use_lut)
        acc -= zero * ones
    return acc


def nearest_hamming(sk: np.ndarray, qs: np.ndarray, n_cand: int, use_lut: bool | None = None,
                    block: int = 65536) -> np.ndarray:
    """``select_best(hamming(sk, qs), n_cand, higher=False)``: the same positions, ties at the
    cut included, found with less work than a histogram of every distance. At 1M vectors
    ``np.bincount`` over the distances (each cast to an int64 first) was 1.1 ms of the ~5 ms a
    query spent on the sketches; here a histogram of every 64th distance guesses a cut ``t0``
    a little past the wanted one, one comparison pass keeps the distances ``<= t0``, and the
    histogram of those alone gives the exact cut (when the guess falls short, the histogram
    of every distance, as before). The distances are :func:`hamming`'s."""
    w, n = sk.shape
    if n_cand >= n:
        return np.arange(n)
    return _nearest(hamming(sk, qs, use_lut, block), n_cand, 64 * w)


SAMPLE_STEP = 64          # nearest_hamming's guess reads every 64th distance


def _nearest(dist: np.ndarray, n_cand: int, top: int) -> np.ndarray:
    """``np.flatnonzero(dist <= _cut(dist, n_cand, top))`` with one pass over ``dist`` instead
    of two: the positions within the guessed cut ``t0`` are kept (not their distances alone),
    and the exact cut is applied to those few (~10,000 of 1M). The second comparison over
    every distance was 0.26 of the 0.73 ms the cut took at 1M."""
    n = len(dist)
    sample = dist[::SAMPLE_STEP]
    if len(sample) >= 256:
        want = min(len(sample), int(1.25 * n_cand * len(sample) / n) + 8)
        t0 = int(np.searchsorted(np.cumsum(np.bincount(sample, minlength=top + 1)), want))
        idx = np.flatnonzero(dist <= t0)
        if len(idx) >= n_cand:
            near = dist[idx]
            cut = int(np.searchsorted(np.cumsum(np.bincount(near, minlength=t0 + 1)), n_cand))
            return idx if cut >= t0 else idx[near <= cut]
    return np.flatnonzero(dist <= _cut(dist, n_cand, top))


def _cut(dist: np.ndarray, n_cand: int, top: int) -> int:
    """The smallest ``t`` with ``count(dist <= t) >= n_cand`` (``dist`` in ``0..top``)."""
    n = len(dist)
    sample = dist[::SAMPLE_STEP]
    if len(sample) >= 256:
        want = min(len(sample), int(1.25 * n_cand * len(sample) / n) + 8)       # a margin past the cut
        t0 = int(np.searchsorted(np.cumsum(np.bincount(sample, minlength=top + 1)), want))
        near = dist[dist <= t0]
        if len(near) >= n_cand:
            return int(np.searchsorted(np.cumsum(np.bincount(near, minlength=t0 + 1)), n_cand))
    return int(np.searchsorted(np.cumsum(np.bincount(dist, minlength=top + 1)), n_cand))


def select_best(scores: np.ndarray, n_cand: int, higher: bool = True, block: int = 65536) -> np.ndarray:
    """Positions of the ``n_cand`` best integer scores (all rows tied at the cut are kept, so
    the result can be a little longer), ascending positions. A histogram of the scores (built
    block by block: no full-size temporaries) finds the cut; no sort, no argpartition."""
    n = len(scores)
    if n_cand >= n:
        return np.arange(n)
    lo, hi = int(scores.min()), int(scores.max())
    hist = np.zeros(hi - lo + 1, dtype=np.int64)
    for s in range(0, n, block):
        part = scores[s:s + block]
        hist += np.bincount((part - lo) if lo else part, minlength=len(hist))
    if higher:
        cum = np.cumsum(hist[::-1])
        thr = hi - int(np.searchsorted(cum, n_cand))            # first value reaching n_cand
        return np.flatnonzero(scores >= thr)
    cum = np.cumsum(hist)
    thr = lo + int(np.searchsorted(cum, n_cand))
    return np.flatnonzero(scores <= thr)


def candidates(sk: np.ndarray, qr: np.ndarray, n_cand: int = 500, mode: str = "cascade",
               n_first: int = 4000, planes: int = 4, first_words: int | None = None) -> np.ndarray:
    """Positions of the short list. ``hamming``/``asym``: one pass over every sketch.
    ``cascade``: Hamming over every sketch (on its first ``first_words`` 64-bit words only, if
    given: less work, a longer ``n_first`` needed) keeps ``n_first``, the asymmetric score on
    all words (better, ~5x the cost per row) keeps ``n_cand`` of those."""
    if mode == "hamming":
        return select_best(hamming(sk, sketch_query(qr)), n_cand, higher=False)
    if mode == "asym":
        return select_best(asym_scores(sk, query_planes(qr, planes)), n_cand, higher=True)
    if mode != "cascade":
        raise ValueError(f"mode must be hamming, asym or cascade, got {mode!r}")
    w = sk.shape[0] if first_words is None else first_words
    first = nearest_hamming(sk[:w], sketch_query(qr)[:w], n_first)
    # np.take along the columns: 0.07 ms for ~10,000 columns at 1M where ``sk[:, first]`` took 0.39
    second = select_best(asym_scores(np.take(sk, first, axis=1), query_planes(qr, planes)), n_cand, higher=True)
    return first[second]


# ---------------------------------------------------------------------------- references
def hamming_ref(sk: np.ndarray, qs: np.ndarray) -> list[int]:
    """Slow reference: Python ints, one vector (column) at a time."""
    q = [int(x) for x in qs.tolist()]
    return [sum(bin(int(a) ^ b).count("1") for a, b in zip(col, q)) for col in sk.T.tolist()]


def asym_ref(codes: np.ndarray, qr: np.ndarray, planes: int = 4) -> list[int]:
    """Slow reference: the rounded, zero-shifted query dotted with each row's 0/1 sign vector."""
    q = np.asarray(qr, dtype=np.float64)
    lo, hi = min(float(q.min()), 0.0), max(float(q.max()), 0.0)
    top = (1 << planes) - 1
    step = (hi - lo) / top if hi > lo else 1.0
    qi = [min(top, max(0, int(round((x - lo) / step)))) for x in q.tolist()]
    zero = min(top, max(0, int(round(-lo / step))))
    out = []
    for row in np.asarray(codes).tolist():
        out.append(sum(v - zero for v, c in zip(qi, row) if c > 0))
    return out


# ---------------------------------------------------------------------------- score moments
def moments(codes: np.ndarray, scales: np.ndarray, block: int = 4096) -> tuple[int, np.ndarray, np.ndarray]:
    """``(n, m1, M2)`` of the stored vectors ``v_i = scale_i * codes_i``: ``m1 = sum v_i``
    (float64 ``(d,)``) and ``M2 = sum v_i v_i^T`` (float64 ``(d, d)``). With them the mean and
    spread of the dense scores ``s_i = <v_i, qr>`` over the whole index are exact for any query
    (:func:`score_stats`) without touching a vector: what the pipeline's z-normalisation needs
    from the full scan. Additive: a put adds a block's moments, a delete subtracts them."""
    codes = np.asarray(codes)
    d = codes.shape[1]
    m1 = np.zeros(d)
    m2 = np.zeros((d, d))
    for s in range(0, len(codes), block):
        v = codes[s:s + block].astype(np.float64) * np.asarray(scales[s:s + block], dtype=np.float64)[:, None]
        m1 += v.sum(axis=0)
        m2 += v.T @ v
    return len(codes), m1, m2


def score_stats(mom: tuple[int, np.ndarray, np.ndarray], qr: np.ndarray) -> tuple[float, float]:
    """(mean, standard deviation) of ``<v_i, qr>`` over the vectors ``mom`` summarises."""
    n, m1, m2 = mom
    if n == 0:
        return 0.0, 0.0
    q = np.asarray(qr, dtype=np.float64)
    mu = float(m1 @ q) / n
    var = float(q @ m2 @ q) / n - mu * mu
    return mu, float(np.sqrt(max(var, 0.0)))
