#!/usr/bin/env python3
"""A second, independent reader of awari endgame databases (the contract of DESIGN.md).

It shares no code with the Rust tool: the rules of both rule sets, the Romein-Bal
index generalised to P pits, the level header and the XXH3-64 checksum are written
again here from the contract, so that the two can check each other.

    python3 tools/awari_db.py [--dir db] [--rules awari|oware] [--pits 6] PIT...
    python3 tools/awari_db.py --json PIT...      one JSON object, as `awari query --json`
    python3 tools/awari_db.py --stdin            one position per line, one JSON object each
    python3 tools/awari_db.py check [--dir db] [--rules R] [--pits P] [--levels A..=B]

A query prints the value of the position and of each legal move, with the same
numbers as `awari query` (JSON: the same fields except `line`, byte for byte). Levels
are read one byte per probe through a memory map, after their header is checked
(magic, version, header checksum, complete mark, index scheme, payload offset, rule
set, P, level, positions, file length). Unlike `awari query`, a query does not
recompute a level's payload checksum: `check` does that, and also checks that the
header padding is zero and that every value is in -n..=n.

Dependencies: none beyond the Python 3.11 standard library for raw levels
(`level-NNN.awl`): queries, `check` and the XXH3-64 checksum are pure Python. Packed
levels (`level-NNN.awp`) are zstd-compressed and zstd is not in the standard library;
this reader does not read them (that would need the `zstandard` PyPI package): a
level or distance table (`level-NNN.adz`) that is only packed is refused with one line
that says so, and `awari unpack` turns it back into a raw one. Bad input gives one line `error: ...` on stderr and
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import math
import mmap
import os
import re
import struct
import sys
import time
from array import array
from functools import lru_cache
from operator import add, mul
from pathlib import PurePath
from typing import Callable, Iterator, NamedTuple, Sequence, TextIO

if sys.version_info < (3, 9):
    sys.exit("error: awari_db.py needs Python 3.9 or newer (tested with 3.11)")

# ---------------------------------------------------------------------------------
# Errors

class ToolError(Exception):
    """A problem the user can act on: printed as one `error:` line, never a traceback."""


class MissingLevel(ToolError):
    """A level a probe needs is not built. The build command is for `upto`, so that one
    build answers the query (a child's level is missing: build up to the position's)."""

    def __init__(self, db: "Database", seeds: int, upto: int):
        self.seeds = seeds
        super().__init__(
            f"level {seeds} ({db.rules}, {db.pits} pits per side) is not built in "
            f"{db.dir}; run `{db.build_command(upto)}`"
        )


# ---------------------------------------------------------------------------------
# The rules (DESIGN.md section 1). A board is a tuple of 2P counts, side to move first.

RULES = ("awari", "oware")
MAX_PITS = 8
MAX_SEEDS = 127  # values are signed bytes


class Move(NamedTuple):
    pit: int
    captured: int
    ends_game: bool  # Awari: every move starves the opponent; the mover takes the rest
    child: tuple[int, ...]  # the board after the move, seen from the opponent


class Moves(NamedTuple):
    moves: list[Move]
    terminal: int | None  # the value when the game is over before any move


def sow(pits: list[int], origin: int) -> int:
    """Sows `origin` seed by seed, skipping it on every lap; returns the last pit sown."""
    seeds, pits[origin], j = pits[origin], 0, origin
    while seeds:
        j = (j + 1) % len(pits)
        if j != origin:
            pits[j] += 1
            seeds -= 1
    return j


def play(board: Sequence[int], p: int, rules: str, origin: int) -> tuple[list[int], int]:
    """The board after sowing `origin` and capturing, still in the mover's frame, and
    the seeds captured."""
    pits = list(board)
    last = sow(pits, origin)
    before = pits[:]
    captured = 0
    j = last
    while j >= p and pits[j] in (2, 3):
        captured += pits[j]
        pits[j] = 0
        j -= 1
    if captured and rules == "oware" and not any(pits[p:]):
        return before, 0  # grand slam: a capture of every opponent seed takes nothing
    return pits, captured


def legal_moves(board: Sequence[int], p: int, rules: str) -> Moves:
    n = sum(board)
    if not any(board[:p]):
        return Moves([], -n)  # no seeds to move: the opponent takes the rest
    moves, starving = [], []
    for o in range(p):
        if board[o]:
            pits, captured = play(board, p, rules, o)
            moves.append(Move(o, captured, False, tuple(pits[p:] + pits[:p])))
            starving.append(not any(pits[p:]))
    if all(starving):
        if rules == "oware":
            return Moves([], n)  # cannot feed: the mover takes the rest
        return Moves([m._replace(ends_game=True) for m in moves], None)
    # Some move feeds the opponent: moves that leave it no seeds are illegal.
    return Moves([m for m, s in zip(moves, starving) if not s], None)


def is_stored(board: Sequence[int], p: int) -> bool:
    """The database stores a position iff some opponent pit is empty."""
    return 0 in board[p:]


# ---------------------------------------------------------------------------------
# The index (DESIGN.md section 3): the rank of a stored position among the stored
# positions of its level, in ascending lexicographic order of (pit 2P-1, ..., pit 0).

@lru_cache(maxsize=None)
def compositions(k: int, s: int) -> int:
    """Ways to put `s` seeds into `k >= 1` pits."""
    return math.comb(s + k - 1, k - 1) if s >= 0 else 0


@lru_cache(maxsize=None)
def completions(p: int, i: int, s: int, has_zero: bool) -> int:
    """Stored positions that fix pits 2P-1..i and put `s` seeds in pits i-1..0.
    Without an empty opponent pit among the fixed ones, one must be among the
    `i - P` opponent pits still to fill: drop the fillings where all of them are
    non-empty (give each one seed first)."""
    if has_zero:
        return compositions(i, s)
    opponent_left = max(0, i - p)
    if opponent_left == 0:
        return 0
    return compositions(i, s) - compositions(i, s - opponent_left)


def level_size(p: int, n: int) -> int:
    return math.comb(n + 2 * p - 1, 2 * p - 1) - math.comb(n + p - 1, 2 * p - 1)


def rank(board: Sequence[int], p: int) -> int:
    """Counts the stored positions before `board`: for each pit from the top, those
    that agree above it and hold fewer seeds in it."""
    left = sum(board)
    has_zero = False
    r = 0
    for i in range(2 * p - 1, 0, -1):
        for y in range(board[i]):
            r += completions(p, i, left - y, has_zero or (i >= p and y == 0))
        left -= board[i]
        has_zero = has_zero or (i >= p and board[i] == 0)
    return r


def unrank(p: int, n: int, index: int) -> tuple[int, ...]:
    """The position of level `n` with the given rank: the same walk as `rank`."""
    if not 0 <= index < level_size(p, n):
        raise ToolError(f"index {index} is not in level {n} ({level_size(p, n)} positions)")
    board = [0] * (2 * p)
    left = n
    has_zero = False
    for i in range(2 * p - 1, 0, -1):
        y = 0
        while True:
            count = completions(p, i, left - y, has_zero or (i >= p and y == 0))
            if index < count:
                break
            index -= count
            y += 1
        board[i] = y
        left -= y
        has_zero = has_zero or (i >= p and y == 0)
    board[0] = left
    return tuple(board)


def max_supported(p: int) -> int:
    """The most seeds whose levels the Rust index can rank on this board size: its
    binomial table must hold C(a, b) for a <= n + 2P, b < 2P below 2^64 - 1."""
    n = MAX_SEEDS
    while max(math.comb(n + 2 * p, b) for b in range(2 * p)) >= (1 << 64) - 1:
        n -= 1
    return n


# ---------------------------------------------------------------------------------
# XXH3-64, seed 0, default secret: the checksum of level headers and payloads.

M64 = (1 << 64) - 1
PRIME32_1, PRIME32_2, PRIME32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
PRIME64_1, PRIME64_2, PRIME64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
PRIME64_4, PRIME64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
PRIME_MX1, PRIME_MX2 = 0x165667919E3779F9, 0x9FB21C651E98DF25
SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
)
STRIPE = 64
BLOCK = 1024  # 16 stripes, each keyed with the secret 8 bytes further on
# Long inputs are hashed in chunks of this many blocks (1 MiB).
CHUNK_BLOCKS = 1024


def _u64(b: bytes | memoryview, at: int) -> int:
    return int.from_bytes(b[at:at + 8], "little")


def _fold(a: int, b: int) -> int:
    """The 128-bit product of two u64, its halves xored."""
    x = a * b
    return (x ^ (x >> 64)) & M64


def _avalanche(h: int) -> int:
    h ^= h >> 37
    h = (h * PRIME_MX1) & M64
    return h ^ (h >> 32)


def _xxh64_avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * PRIME64_2) & M64
    h ^= h >> 29
    h = (h * PRIME64_3) & M64
    return h ^ (h >> 32)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def _mix16(data: bytes | memoryview, at: int, secret_at: int) -> int:
    return _fold(_u64(data, at) ^ _u64(SECRET, secret_at),
                 _u64(data, at + 8) ^ _u64(SECRET, secret_at + 8))


def _short(data: bytes | memoryview) -> int:
    """Inputs of 0 to 16 bytes."""
    n = len(data)
    if n == 0:
        return _xxh64_avalanche(_u64(SECRET, 56) ^ _u64(SECRET, 64))
    if n <= 3:
        combined = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        flip = int.from_bytes(SECRET[0:4], "little") ^ int.from_bytes(SECRET[4:8], "little")
        return _xxh64_avalanche(combined ^ flip)
    if n <= 8:
        lo = int.from_bytes(data[0:4], "little")
        hi = int.from_bytes(data[n - 4:n], "little")
        h = (hi + (lo << 32)) ^ _u64(SECRET, 8) ^ _u64(SECRET, 16)
        h ^= _rotl(h, 49) ^ _rotl(h, 24)
        h = (h * PRIME_MX2) & M64
        h ^= (h >> 35) + n
        h = (h * PRIME_MX2) & M64
        return h ^ (h >> 28)
    lo = _u64(data, 0) ^ _u64(SECRET, 24) ^ _u64(SECRET, 32)
    hi = _u64(data, n - 8) ^ _u64(SECRET, 40) ^ _u64(SECRET, 48)
    swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
    return _avalanche((n + swapped + hi + _fold(lo, hi)) & M64)


def _medium(data: bytes | memoryview) -> int:
    """Inputs of 17 to 240 bytes."""
    n = len(data)
    acc = n * PRIME64_1
    if n <= 128:
        pairs = (n - 1) // 32 + 1  # 16-byte pairs from both ends, 1 to 4 of them
        for k in range(pairs):
            acc += _mix16(data, 16 * k, 32 * k) + _mix16(data, n - 16 * (k + 1), 32 * k + 16)
        return _avalanche(acc & M64)
    for k in range(8):
        acc += _mix16(data, 16 * k, 16 * k)
    acc = _avalanche(acc & M64)
    for k in range(8, n // 16):
        acc += _mix16(data, 16 * k, 16 * (k - 8) + 3)
    acc += _mix16(data, n - 16, 136 - 17)
    return _avalanche(acc & M64)


def _accumulate(acc: list[int], stripe: bytes | memoryview, secret_at: int) -> None:
    """One stripe, lane by lane (used only for the last, partial block)."""
    data = struct.unpack("<8Q", stripe)
    keys = struct.unpack_from("<8Q", SECRET, secret_at)
    for i in range(8):
        k = data[i] ^ keys[i]
        acc[i ^ 1] += data[i]
        acc[i] += (k & 0xFFFFFFFF) * (k >> 32)


# The key of every stripe of a block, as one integer per chunk: xoring a whole chunk
# with it keys every lane at once.
_BLOCK_KEY = b"".join(SECRET[8 * s:8 * s + STRIPE] for s in range(BLOCK // STRIPE))
_CHUNK_KEY = int.from_bytes(_BLOCK_KEY * CHUNK_BLOCKS, "little")
_SCRAMBLE_KEY = struct.unpack_from("<8Q", SECRET, len(SECRET) - STRIPE)


def _block_sums(chunk: memoryview) -> list[list[int]]:
    """What each block of `chunk` adds to each lane before its scramble: per lane,
    the lane's 16 products lo(k) * hi(k) of the keyed data k, plus the 16 data words
    of its partner lane. Built with C-level map/zip/sum over the whole chunk, since
    a Python loop per lane and stripe is several times slower."""
    size = len(chunk)
    key = _CHUNK_KEY if size == BLOCK * CHUNK_BLOCKS else int.from_bytes(
        _BLOCK_KEY * (size // BLOCK), "little")
    keyed = int.from_bytes(chunk, "little") ^ key
    halves = array("I", keyed.to_bytes(size, "little"))
    words = array("Q")
    words.frombytes(chunk)  # array("Q", chunk) would take a memoryview byte by byte
    if sys.byteorder == "big":
        halves.byteswap()
        words.byteswap()
    sums = []
    for i in range(8):
        products = map(mul, halves[2 * i::16], halves[2 * i + 1::16])
        per_block_products = map(sum, zip(*[products] * 16))
        per_block_data = map(sum, zip(*[iter(words[i ^ 1::8])] * 16))
        sums.append(list(map(add, per_block_products, per_block_data)))
    return sums


def _scramble_blocks(acc: list[int], sums: list[list[int]]) -> None:
    """Adds each block's sums to the lanes and scrambles them, block after block."""
    keys = _SCRAMBLE_KEY
    for block in zip(*sums):
        for i in range(8):
            a = (acc[i] + block[i]) & M64
            acc[i] = (((a ^ (a >> 47)) ^ keys[i]) * PRIME32_1) & M64


def _long(data: memoryview, progress: Callable[[int], None] | None) -> int:
    """Inputs over 240 bytes: 8 lanes over 64-byte stripes, scrambled every block."""
    n = len(data)
    acc = [PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1]
    blocks = (n - 1) // BLOCK  # the last block, even if full, ends differently
    for first in range(0, blocks, CHUNK_BLOCKS):
        last = min(blocks, first + CHUNK_BLOCKS)
        _scramble_blocks(acc, _block_sums(data[first * BLOCK:last * BLOCK]))
        if progress:
            progress(last * BLOCK)
    tail = blocks * BLOCK
    for s in range((n - 1 - tail) // STRIPE):
        _accumulate(acc, data[tail + s * STRIPE:tail + (s + 1) * STRIPE], 8 * s)
    _accumulate(acc, data[n - STRIPE:n], len(SECRET) - STRIPE - 7)
    result = n * PRIME64_1
    for k in range(4):
        result += _fold((acc[2 * k] & M64) ^ _u64(SECRET, 11 + 16 * k),
                        (acc[2 * k + 1] & M64) ^ _u64(SECRET, 11 + 16 * k + 8))
    return _avalanche(result & M64)


def xxh3_64(data: bytes | memoryview, progress: Callable[[int], None] | None = None) -> int:
    """XXH3-64 with seed 0 and the default secret, as the `xxhash-rust` crate computes
    it. `progress(bytes_done)` is called after each MiB of a long input."""
    data = memoryview(data).cast("B")
    if len(data) <= 16:
        return _short(data)
    if len(data) <= 240:
        return _medium(data)
    return _long(data, progress)


# ---------------------------------------------------------------------------------
# Level files (DESIGN.md section 4).

MAGIC = b"AWARIDB\0"
VERSION = 1
INDEX_ROMEIN_BAL = 1
PAYLOAD_OFFSET = 4096


class Header(NamedTuple):
    rules: str
    pits: int
    seeds: int
    positions: int
    checksum: int


def decode_header(h: bytes) -> Header:
    """The header's fields; a ToolError says what is wrong with it (the Rust words)."""
    if len(h) < PAYLOAD_OFFSET:
        raise ToolError(f"truncated: {len(h)} bytes, shorter than the {PAYLOAD_OFFSET}-byte header")
    if h[0:8] != MAGIC:
        raise ToolError("not an awari level file (bad magic)")
    version, = struct.unpack_from("<I", h, 8)
    if version != VERSION:
        raise ToolError(f"format version {version}, this tool reads version {VERSION}")
    if _u64(h, 40) != xxh3_64(h[0:40]):
        raise ToolError("damaged header (header checksum mismatch)")
    if h[15] != 1:
        raise ToolError("unfinished level (no complete mark)")
    if h[14] != INDEX_ROMEIN_BAL:
        raise ToolError(f"unknown index scheme {h[14]}")
    offset, = struct.unpack_from("<I", h, 20)
    if offset != PAYLOAD_OFFSET:
        raise ToolError(f"unexpected payload offset {offset}")
    if h[12] >= len(RULES):
        raise ToolError(f"unknown rule set {h[12]}")
    seeds, = struct.unpack_from("<I", h, 16)
    return Header(RULES[h[12]], h[13], seeds, _u64(h, 24), _u64(h, 32))


def level_path(dir: str, n: int) -> str:
    return os.path.join(dir, f"level-{n:03}.awl")


def packed_path(dir: str, n: int) -> str:
    return os.path.join(dir, f"level-{n:03}.awp")


def awari_command(args: str, root: str, rules: str, pits: int) -> str:
    """An `awari` command line for this database, as the Rust tool words it."""
    cmd = f"awari {args}"
    if pits != 6:
        cmd += f" --pits {pits}"
    if rules != "awari":
        cmd += f" --rules {rules}"
    if PurePath(root) != PurePath("db"):
        cmd += f" --dir {root}"
    return cmd


class Level:
    """An open raw level: header checked against what the caller expects, payload
    memory-mapped and read one byte per probe."""

    def __init__(self, path: str, rules: str, p: int, n: int):
        self.path, self.seeds = path, n
        try:
            with open(path, "rb") as f:
                self.header = self._expected(self._decoded(f.read(PAYLOAD_OFFSET)), rules, p, n)
                self._check_length(os.fstat(f.fileno()).st_size)
                self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise self.bad(f"{e.strerror} (os error {e.errno})") from None

    def bad(self, problem: str) -> ToolError:
        return ToolError(f"{self.path}: {problem}")

    def _decoded(self, head: bytes) -> Header:
        try:
            return decode_header(head)
        except ToolError as e:
            raise self.bad(str(e)) from None

    def _expected(self, h: Header, rules: str, p: int, n: int) -> Header:
        for what, got, want in (("rules", h.rules, rules), ("P =", h.pits, p),
                                ("level", h.seeds, n),
                                ("positions:", h.positions, level_size(p, n))):
            if got != want:
                raise self.bad(f"holds {what} {got}, expected {want}: a level of another database")
        return h

    def _check_length(self, length: int) -> None:
        want = PAYLOAD_OFFSET + self.header.positions
        if length != want:
            raise self.bad(f"{length} bytes, expected {want}: "
                           f"{'truncated' if length < want else 'trailing data'}")

    def value(self, index: int) -> int:
        byte = self.map[PAYLOAD_OFFSET + index]
        return byte - 256 if byte > 127 else byte

    def payload(self) -> memoryview:
        return memoryview(self.map)[PAYLOAD_OFFSET:]


DTC_MAGIC = b"AWARIDT\0"


class Table:
    """A level's distance table (`level-NNN.awd`, DESIGN.md section 4.6): its header
    checked against its level's (the payload checksum is not read, as a raw level's is
    not here), payload memory-mapped, one or two bytes a distance."""

    def __init__(self, path: str, level: Level):
        self.path = path
        try:
            with open(path, "rb") as f:
                h = f.read(PAYLOAD_OFFSET)
                if len(h) < PAYLOAD_OFFSET:
                    raise self.bad(f"truncated: {len(h)} bytes, shorter than the "
                                   f"{PAYLOAD_OFFSET}-byte header")
                if h[0:8] != DTC_MAGIC:
                    raise self.bad("not a distance table (bad magic)")
                version, = struct.unpack_from("<I", h, 8)
                if version != 1:
                    raise self.bad(f"format version {version}, this tool reads version 1")
                if _u64(h, 64) != xxh3_64(h[0:64]):
                    raise self.bad("damaged header (header checksum mismatch)")
                seeds, = struct.unpack_from("<I", h, 16)
                lh = level.header
                if (h[12], h[13], seeds, _u64(h, 24)) != (RULES.index(lh.rules), lh.pits,
                                                          lh.seeds, lh.positions):
                    raise self.bad("a table of another database or level")
                self.width = h[40]
                if self.width not in (1, 2):
                    raise self.bad(f"unknown width {self.width}")
                if _u64(h, 48) != lh.checksum:
                    raise self.bad(f"made from other values than level {lh.seeds}'s: the level "
                                   f"was built again; run `awari dtc` again")
                want = PAYLOAD_OFFSET + lh.positions * self.width
                length = os.fstat(f.fileno()).st_size
                if length != want:
                    raise self.bad(f"truncated or padded: {length} bytes, a table of "
                                   f"{lh.positions} positions has {want}")
                self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise self.bad(f"{e.strerror} (os error {e.errno})") from None

    def bad(self, problem: str) -> ToolError:
        return ToolError(f"{self.path}: {problem}")

    def distance(self, index: int) -> int | None:
        at = PAYLOAD_OFFSET + index * self.width
        d = self.map[at] if self.width == 1 else self.map[at] | self.map[at + 1] << 8
        return d or None


def open_level(root: str, rules: str, p: int, n: int) -> Level | None:
    """Level `n` of the database under `root`; None if it has no file at all."""
    dir = os.path.join(root, f"{rules}-{p}")
    if os.path.exists(level_path(dir, n)):
        return Level(level_path(dir, n), rules, p, n)
    if os.path.exists(packed_path(dir, n)):
        raise ToolError(
            f"level {n} is only packed ({packed_path(dir, n)}); this reader reads raw levels "
            f"only (packs would need zstd: the zstandard PyPI package): run "
            f"`{awari_command(f'unpack --level {n}', root, rules, p)}`")
    return None


# ---------------------------------------------------------------------------------
# Probing (what `awari query` answers; DESIGN.md sections 3.6 and 3.7).

class Database:
    def __init__(self, root: str, rules: str, pits: int):
        if not 2 <= pits <= MAX_PITS:
            raise ToolError(f"pits per side must be 2..={MAX_PITS}, not {pits}")
        self.root, self.rules, self.pits = root, rules, pits
        self.dir = os.path.join(root, f"{rules}-{pits}")
        self.max_seeds = max_supported(pits)
        self.levels: dict[int, Level] = {}
        self.tables: dict[int, Table | None] = {}

    def build_command(self, seeds: int) -> str:
        return awari_command(f"build --max-seeds {seeds}", self.root, self.rules, self.pits)

    def level(self, n: int) -> Level:
        if n > self.max_seeds:
            raise ToolError(f"{n} seeds: more than this board size supports")
        if n not in self.levels:
            level = open_level(self.root, self.rules, self.pits, n)
            if level is None:
                raise MissingLevel(self, n, n)
            self.levels[n] = level
        return self.levels[n]

    def table(self, n: int) -> Table | None:
        """Level `n`'s distance table; None if it has none."""
        if n not in self.tables:
            path = os.path.join(self.dir, f"level-{n:03}.awd")
            packed = os.path.join(self.dir, f"level-{n:03}.adz")
            level = self.level(n)
            if not os.path.exists(path) and os.path.exists(packed):
                raise ToolError(
                    f"level {n}'s distance table is only packed ({packed}); this reader reads "
                    f"raw tables only (packs would need zstd): run "
                    f"`{awari_command(f'unpack --level {n}', self.root, self.rules, self.pits)}`")
            self.tables[n] = Table(path, level) if os.path.exists(path) else None
        return self.tables[n]

    def distance(self, board: tuple[int, ...]) -> int | None:
        """The distance to conversion (DESIGN.md section 5.7); None for a draw, a game
        over, or a level without a table."""
        n = sum(board)
        if is_stored(board, self.pits):
            t = self.table(n)
            return t.distance(rank(board, self.pits)) if t else None
        return self.analyze(board)["distance"]

    def board(self, counts: list[int]) -> tuple[int, ...]:
        p = self.pits
        if len(counts) != 2 * p:
            raise ToolError(f"a board of {p} pits per side needs {2 * p} pit counts, got {len(counts)}")
        if sum(counts) > MAX_SEEDS:
            raise ToolError(f"{sum(counts)} seeds on the board; at most {MAX_SEEDS} are supported")
        return tuple(counts)

    def stored_value(self, board: tuple[int, ...]) -> int:
        return self.level(sum(board)).value(rank(board, self.pits))

    def probe(self, board: tuple[int, ...]) -> int:
        if is_stored(board, self.pits):
            return self.stored_value(board)
        return self.analyze(board)["value"]  # its children are all stored

    def move_value(self, move: Move, n: int) -> int:
        if move.ends_game:
            return n
        try:
            return move.captured - self.probe(move.child)
        except MissingLevel as e:
            raise MissingLevel(self, e.seeds, n) from None

    def analyze(self, board: tuple[int, ...]) -> dict:
        """The fields of `awari query --json` but `line`."""
        n = sum(board)
        legal = legal_moves(board, self.pits, self.rules)
        moves = [{"pit": m.pit, "value": self.move_value(m, n), "captured": m.captured,
                  "ends_game": m.ends_game} for m in legal.moves]
        game_over = None
        if legal.terminal is None:
            value = max(m["value"] for m in moves)
        else:
            value = legal.terminal
            game_over = ("no seeds to move: the opponent takes the rest" if value < 0 or n == 0
                         else "cannot feed the opponent: the side to move takes the rest")
        stored = is_stored(board, self.pits)
        if stored and (v := self.stored_value(board)) != value:
            raise self.level(n).bad(f"inconsistent: position {' '.join(map(str, board))} is stored "
                                    f"as {v} but its moves give {value}; run `awari verify`")
        table = self.table(n)
        for m, mv in zip(legal.moves, moves):
            converts = (m.ends_game or m.captured > 0
                        or legal_moves(m.child, self.pits, self.rules).terminal is not None)
            if table is None:
                mv["distance"] = None
            elif converts:
                mv["distance"] = 1
            else:
                d = self.distance(m.child)  # an in-level child is stored
                mv["distance"] = None if d is None else d + 1
        keeping = [mv["distance"] for mv in moves if mv["value"] == value]
        distance = None
        if table is not None and game_over is None and value != 0:
            if value > 0:
                distance = min((d for d in keeping if d is not None), default=None)
            elif None not in keeping:
                distance = max(keeping, default=None)
        if stored and table is not None:
            d = table.distance(rank(board, self.pits))
            if d != distance:
                raise table.bad(f"inconsistent: position {' '.join(map(str, board))} has "
                                f"distance {d} in the table but its moves give {distance}; run "
                                f"`awari dtc --force --levels {n}`")
        return {"rules": self.rules, "pits": list(board), "seeds": n, "value": value,
                "stored": stored, "moves": moves,
                "best": [m["pit"] for m in moves if m["value"] == value], "game_over": game_over,
                "distance": distance}


def parse_counts(words: list[str]) -> list[int]:
    """Pit counts separated by spaces, tabs or commas, as `awari query` reads them."""
    counts = []
    for w in (w for text in words for w in re.split(r"[, \t]", text) if w):
        if w.startswith("-"):
            raise ToolError(f"'{w}' is negative: pit counts are 0 or more seeds")
        if not re.fullmatch(r"\+?[0-9]+", w) or int(w) >= 1 << 32:
            raise ToolError(f"'{w}' is not a number of seeds")
        counts.append(int(w))
    return counts


def to_json(analysis: dict) -> str:
    """As serde_json prints it: keys sorted, no spaces."""
    return json.dumps(analysis, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def draw(board: Sequence[int], p: int) -> str:
    """The board as players see it: the opponent's row on top, from pit 2P-1."""
    top = range(2 * p - 1, p - 1, -1)
    return ("  opponent " + "".join(f"{chr(ord('A') + i - p):>4}" for i in top)
            + "\n           " + "".join(f"{board[i]:>4}" for i in top)
            + "\n           " + "".join(f"{board[i]:>4}" for i in range(p))
            + "\n  to move  " + "".join(f"{chr(ord('a') + i):>4}" for i in range(p)) + "\n")


def verdict(v: int) -> str:
    return "draw" if v == 0 else f"wins by {v}" if v > 0 else f"loses by {-v}"


def report(db: Database, a: dict) -> str:
    """The text of `awari query`."""
    out = draw(a["pits"], db.pits)
    out += (f"{db.rules} rules, {a['seeds']} seeds: value {a['value']:+d} for the side to move "
            f"({verdict(a['value'])})\n")
    if a["game_over"]:
        out += f"game over: {a['game_over']}\n"
    if a["distance"] is not None:
        out += (f"distance to conversion: {a['distance']} plies (the next capture or the game's "
                f"end, both sides keeping the value)\n")
    # The distances column where the level has a table (`awari dtc`).
    tables = any(m["distance"] is not None for m in a["moves"])
    if a["moves"]:
        out += f"{'move':>5} {'value':>6} {'captures':>9}" + ("  distance" if tables else "") + "\n"
        for m in a["moves"]:
            name = f"{chr(ord('a') + m['pit'])} ({m['pit']})"
            d = "" if not tables else f" {m['distance'] if m['distance'] is not None else '-':>8}"
            out += (f"{name:>5} {m['value']:>+6d} {m['captured']:>9}{d}"
                    + ("  best" if m["pit"] in a["best"] else "")
                    + ("  (ends the game)" if m["ends_game"] else "") + "\n")
    return out


def query_stream(db: Database, lines: Iterator[str], out: TextIO) -> None:
    """One JSON object per non-blank line; a line that fails gives {"error": ...}."""
    for text in lines:
        text = text.removesuffix("\n").removesuffix("\r")
        if not text.strip():
            continue
        try:
            line = to_json(db.analyze(db.board(parse_counts([text]))))
        except ToolError as e:
            line = to_json({"error": str(e)})
        out.write(line + "\n")


# ---------------------------------------------------------------------------------
# check: every header and payload checksum of raw levels.

def parse_levels(text: str) -> range:
    """`A..=B`, `A..B` or one level, as `awari verify --levels` reads them."""
    bad = ToolError(f"--levels '{text}': expected a range of levels like 0..=20, or one level")
    m = re.fullmatch(r"\s*(\d+)\s*(?:(\.\.=?)\s*(\d+)\s*)?", text)
    if not m:
        raise bad
    a = int(m[1])
    b = a if m[2] is None else int(m[3]) - (m[2] == "..")
    if m[2] == ".." and int(m[3]) == 0:
        raise ToolError(f"--levels '{text}': the range is empty")
    if a > b:
        raise ToolError(f"--levels '{text}': the first level ({a}) is above the last ({b})")
    return range(a, b + 1)


def listed_levels(dir: str, suffix: str) -> set[int]:
    names = (re.fullmatch(rf"level-(\d+)\.{suffix}", f) for f in os.listdir(dir))
    return {int(m[1]) for m in names if m}


def check_payload(level: Level, progress: Callable[[int], None] | None) -> None:
    """Header padding zero, every value in -n..=n, payload checksum as in the header."""
    head = level.map[48:PAYLOAD_OFFSET]
    if head.count(0) != len(head):
        raise level.bad(f"non-zero bytes in the header padding (48..{PAYLOAD_OFFSET})")
    payload = level.payload()
    n = level.seeds
    values = bytes(v & 0xFF for v in range(-n, n + 1))
    for at in range(0, len(payload), 1 << 24):
        data = payload[at:at + (1 << 24)].tobytes()
        if bad := data.translate(None, values):  # what is left is not a value
            v = bad[0] - 256 if bad[0] > 127 else bad[0]
            raise level.bad(f"position {at + data.index(bad[0])} holds {v}, not a value of level {n}")
    got = xxh3_64(payload, progress)
    if got != level.header.checksum:
        raise level.bad(f"damaged payload (checksum {got:016x}, "
                        f"header says {level.header.checksum:016x})")


def progress_printer(level: Level, start: float) -> Callable[[int], None] | None:
    """A progress line on a terminal for levels that take more than a few seconds."""
    if not sys.stderr.isatty() or level.header.positions < 1 << 26:
        return None

    def show(done: int) -> None:
        rate = done / max(time.perf_counter() - start, 1e-9) / 1e6
        sys.stderr.write(f"\r  level {level.seeds}: {100 * done // level.header.positions}% "
                         f"({rate:.1f} MB/s)")
        if done >= level.header.positions - BLOCK:
            sys.stderr.write("\r" + " " * 40 + "\r")
    return show


def cmd_check(args: argparse.Namespace) -> int:
    db = Database(args.dir, args.rules, args.pits)
    if not os.path.isdir(db.dir):
        raise ToolError(f"no database in {db.dir}")
    raw, packed = listed_levels(db.dir, "awl"), listed_levels(db.dir, "awp")
    wanted = parse_levels(args.levels) if args.levels else sorted(raw | packed)
    if not wanted:
        raise ToolError(f"no levels in {db.dir}")
    failed, total_bytes, total_time = 0, 0, 0.0
    for n in wanted:
        start = time.perf_counter()
        try:
            level = open_level(db.root, db.rules, db.pits, n)
            if level is None:
                raise ToolError(f"level {n} is not in {db.dir}")
            check_payload(level, progress_printer(level, start))
        except ToolError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            continue
        dt = time.perf_counter() - start
        size = level.header.positions
        total_bytes, total_time = total_bytes + size, total_time + dt
        print(f"level {n:>3} {size:>14,} positions  ok  xxh3 {level.header.checksum:016x}"
              f"  {dt:7.2f} s  {size / max(dt, 1e-9) / 1e6:6.1f} MB/s", flush=True)
    print(f"checked {len(wanted) - failed} of {len(wanted)} levels in {db.dir}: "
          f"{total_bytes:,} bytes in {total_time:.2f} s "
          f"({total_bytes / max(total_time, 1e-9) / 1e6:.1f} MB/s)")
    if failed:
        raise ToolError(f"{failed} of {len(wanted)} levels failed the check")
    return 0


# ---------------------------------------------------------------------------------
# Command line

def rules_arg(text: str) -> str:
    name = {"awari": "awari", "oware": "oware", "abapa": "oware"}.get(text.lower())
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown rule set '{text}' (expected 'awari' or 'oware')")
    return name


def common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default="db",
                        help="database root, as given to `awari build --dir` (default: db); "
                             "levels are read from DIR/RULES-PITS/")
    parser.add_argument("--rules", type=rules_arg, default="awari",
                        help="awari (default) or oware")
    parser.add_argument("--pits", type=int, default=6, help="pits per side (default: 6)")


def query_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="awari_db.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
The value of a position and of each legal move, read from a database that
`awari build` wrote, with the same numbers as `awari query`: a second
implementation of DESIGN.md in the Python standard library.""",
        epilog="""\
the other command:
  awari_db.py check [--dir db] [--rules R] [--pits P] [--levels A..=B]
      checks every raw level's header and recomputes its payload checksum
      (XXH3-64 in pure Python: about 30 MB/s on one core, so level 20 of
      Awari, 80 MB, takes a few seconds and level 24, 383 MB, about 15 s);
      see `awari_db.py check --help`.

dependencies: none but the Python 3.11 standard library for raw levels
(level-NNN.awl). Packed levels (level-NNN.awp) need zstd, which this reader
does not use (it would need the zstandard PyPI package): run `awari unpack`.

examples:
  python3 tools/awari_db.py --dir db 1 1 1 1 1 2 4 2 3 0 0 0
  printf '1 1 1 1 1 2 4 2 3 0 0 0\\n0,0,0,0,0,1,1,1,1,1,1,1\\n' | python3 tools/awari_db.py --stdin""")
    common_args(parser)
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object, the fields of `awari query --json` but `line`")
    parser.add_argument("--stdin", action="store_true",
                        help="read one position per line from standard input and print one "
                             "JSON object per line; a line that fails gives {\"error\": ...}")
    parser.add_argument("position", nargs="*", metavar="PIT",
                        help="2P seed counts, side to move first (spaces or commas)")
    return parser


def check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="awari_db.py check", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
Checks raw levels: every header field (magic, version, rules, P, level,
positions, complete mark, index scheme, payload offset, header checksum), the
file length, zero header padding, every value in -n..=n, and the payload
checksum (XXH3-64), recomputed.""",
        epilog="""\
speed: XXH3-64 in pure Python runs at about 30 MB/s on one core (levels of
up to a few MB check in well under a second; level 24 of Awari, 383 MB,
about 15 s). A progress line is shown on a terminal for big levels.

Exit status 0 if every level checked is sound, 1 otherwise (one `error:` line
per bad level). A level that is only packed (.awp) is reported: reading
it would need zstd (the zstandard PyPI package); run `awari unpack` first.""")
    common_args(parser)
    parser.add_argument("--levels", metavar="A..=B",
                        help="levels to check, like 0..=20 or 7 (default: every level in the folder)")
    return parser


def cmd_query(args: argparse.Namespace) -> int:
    db = Database(args.dir, args.rules, args.pits)
    if args.stdin:
        if args.position:
            raise ToolError("--stdin reads positions from standard input, not from arguments")
        sys.stdin.reconfigure(newline="\n", errors="strict")  # lines end at \n only, as in Rust
        try:
            query_stream(db, sys.stdin, sys.stdout)
        except UnicodeDecodeError:
            raise ToolError("reading standard input: stream did not contain valid UTF-8") from None
        return 0
    if not args.position:
        raise ToolError("give a position: 2P seed counts, side to move first (or --stdin)")
    analysis = db.analyze(db.board(parse_counts(args.position)))
    sys.stdout.write(to_json(analysis) + "\n" if args.json else report(db, analysis))
    return 0


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["check"]:
            return cmd_check(check_parser().parse_args(argv[1:]))
        return cmd_query(query_parser().parse_args(argv))
    except ToolError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader stopped early (`| head`): nothing left to say, as in the Rust tool.
        # Stdout goes to /dev/null so that Python's flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # a folder that cannot be listed, say
        print(f"error: {e.filename}: {e.strerror} (os error {e.errno})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
