"""The batch probe's speed on raw levels: python3 tools/python/tests/bench.py [DB] [N].

DB: a folder from `awari build --max-seeds 16 --dir db` (default db). N random positions
of 0 to 16 seeds (seeds dropped into the 12 pits at random), as a NumPy uint8 array;
the levels are opened (their checksums read) before the clock starts. Best of 3.
"""

import sys
import time

import numpy as np

import awari

db = sys.argv[1] if len(sys.argv) > 1 else "db"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
tb = awari.open(db)
rng = np.random.default_rng(1)
seeds = rng.integers(0, 17, n)
pos = np.zeros((n, 12), np.uint8)
for k in range(16):
    rows = np.nonzero(seeds > k)[0]
    np.add.at(pos, (rows, rng.integers(0, 12, len(rows))), 1)
tb.probe_many(pos[:10_000])
best = min(
    (lambda t: (tb.probe_many(pos), time.perf_counter() - t)[1])(time.perf_counter())
    for _ in range(3)
)
stored = (pos[:, 6:] == 0).any(axis=1).mean()
print(f"{n} positions ({stored:.1%} stored) in {best:.3f} s: {n / best / 1e6:.2f} million/s")
