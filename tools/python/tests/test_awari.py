"""The Python package against the `awari` binary: the same answers as `awari query
--json` on raw and packed levels of both rule sets, and every bad input refused with
the library's words.

AWARI_BIN names the binary (default: target/release/awari at the repository root,
from `cargo build --release`). The databases are built here, up to MAX_SEEDS seeds.
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

import awari

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("AWARI_BIN", REPO / "target" / "release" / "awari"))
MAX_SEEDS = 14
RULES = ["awari", "oware"]
POSITIONS = 2000  # per rule set


def awari_cmd(*args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        [str(BIN), *args], input=stdin, capture_output=True, text=True, check=True
    ).stdout


def cli_json(root: Path, rules: str, positions: list[list[int]], line: bool = False) -> list[dict]:
    """`awari query --json --stdin`: one object per position (with "error" for a bad one)."""
    args = ["query", "--json", "--stdin", "--dir", str(root), "--rules", rules]
    text = "\n".join(" ".join(map(str, p)) for p in positions) + "\n"
    out = awari_cmd(*args, *(["--line"] if line else []), stdin=text)
    return [json.loads(l) for l in out.splitlines()]


@pytest.fixture(scope="session")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """raw: Awari and Oware up to MAX_SEEDS; packed: the same, packed only (Awari with the
    exit model, Oware plain)."""
    if not BIN.is_file():
        pytest.fail(f"{BIN} not found: run `cargo build --release` or set AWARI_BIN")
    raw = tmp_path_factory.mktemp("raw")
    for rules in RULES:
        awari_cmd("build", "--max-seeds", str(MAX_SEEDS), "--rules", rules, "--dir", str(raw))
    packed = tmp_path_factory.mktemp("packed")
    for rules, model in [("awari", "exits"), ("oware", "plain")]:
        shutil.copytree(raw / f"{rules}-6", packed / f"{rules}-6")
        awari_cmd("pack", "--all", "--remove-raw", "--model", model, "--rules", rules, "--dir", str(packed))
    return {"raw": raw, "packed": packed}


def random_positions(n: int, seed: int) -> list[list[int]]:
    """Seeds dropped at random into the 12 pits, 0 to MAX_SEEDS of them; a few with the
    opponent's pits all full (not stored: valued from the moves) or a side empty."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        pits = [0] * 12
        if i % 10 == 0:
            pits[6:] = [1] * 6
        elif i % 10 == 1:
            side = rng.choice([0, 6])
            for _ in range(rng.randint(0, MAX_SEEDS)):
                pits[side + rng.randrange(6)] += 1
        for _ in range(rng.randint(0, MAX_SEEDS - sum(pits))):
            pits[rng.randrange(12)] += 1
        out.append(pits)
    return out


@pytest.mark.parametrize("kind", ["raw", "packed"])
@pytest.mark.parametrize("rules", RULES)
def test_random_positions_equal_the_cli(dbs, rules, kind):
    root = dbs[kind]
    tb = awari.open(root, rules=rules)
    assert tb.rules == rules and tb.pits == [6]
    want_kind = "raw" if kind == "raw" else "packed"
    assert {k for _, _, k in tb.levels()} == {want_kind}
    assert [n for _, n, _ in tb.levels()] == list(range(MAX_SEEDS + 1))

    positions = random_positions(POSITIONS, seed=RULES.index(rules))
    want = cli_json(root, rules, positions)
    margins = []
    for p, w in zip(positions, want):
        assert tb.moves(p) == w, p
        v = tb.probe(p)
        assert v.margin == w["value"]
        assert v.outcome == ("win" if v.margin > 0 else "loss" if v.margin < 0 else "draw")
        margins.append(v.margin)
    assert tb.probe_many(positions) == margins
    assert tb.probe_many([" ".join(map(str, p)) for p in positions]) == margins
    np = pytest.importorskip("numpy")
    for dtype in [np.uint8, np.int16, np.int64]:
        got = tb.probe_many(np.array(positions, dtype=dtype))
        assert got.dtype == np.int8 and got.tolist() == margins
    # A view with strides (every other row, Fortran order) reads the same.
    a = np.asfortranarray(np.array(positions, dtype=np.int32))[::2]
    assert tb.probe_many(a).tolist() == margins[::2]


@pytest.mark.parametrize("rules", RULES)
def test_lines_equal_the_cli(dbs, rules):
    # Lines of won positions search their level for a conversion: small levels only.
    positions = [p for p in random_positions(200, seed=10 + RULES.index(rules)) if sum(p) <= 9][:12]
    for kind in ["raw", "packed"]:
        tb = awari.open(dbs[kind], rules=rules)
        want = cli_json(dbs[kind], rules, positions, line=True)
        for p, w in zip(positions, want):
            assert tb.line(p) == w["line"], p
    short = tb.line(positions[0], max_plies=1)
    assert len(short["plies"]) <= 1


@pytest.mark.parametrize("rules", RULES)
def test_distances_and_best_moves_equal_the_cli(dbs, rules, tmp_path):
    root = tmp_path / "dtc"
    shutil.copytree(dbs["raw"] / f"{rules}-6", root / f"{rules}-6")
    bare = awari.open(root, rules=rules)
    positions = random_positions(300, seed=20 + RULES.index(rules))
    assert all(bare.distance(p) is None for p in positions[:50])
    awari_cmd("dtc", "--rules", rules, "--dir", str(root))
    tb = awari.open(root, rules=rules)
    want = cli_json(root, rules, positions, line=True)
    with_distance = 0
    for p, w in zip(positions, want):
        line = w.pop("line")
        assert tb.moves(p) == w, p
        assert tb.distance(p) == w["distance"], p
        with_distance += w["distance"] is not None
        plies = line["plies"]
        assert tb.best_move(p) == (plies[0]["pit"] if plies else None), p
    assert with_distance > 100
    # Levels and tables packed: the same distances and best moves.
    awari_cmd("pack", "--all", "--remove-raw", "--rules", rules, "--dir", str(root))
    assert not list((root / f"{rules}-6").glob("*.awd"))
    packed = awari.open(root, rules=rules)
    for p, w in zip(positions, want):
        assert packed.distance(p) == w["distance"], p
        assert packed.best_move(p) == tb.best_move(p), p


def test_values_and_position_forms(dbs):
    tb = awari.open(dbs["raw"] / "awari-6")  # one database folder
    p = [1, 1, 1, 1, 1, 2, 4, 2, 1, 0, 0, 0]
    (c,) = cli_json(dbs["raw"], "awari", [p])
    v = tb.probe(p)
    assert v.margin == c["value"] and str(v) == str(awari.Value(c["value"]))
    assert str(awari.Value(0)) == "margin 0, a draw"
    assert str(awari.Value(3)) == "margin +3, a win"
    assert str(awari.Value(-2)) == "margin -2, a loss"
    assert repr(awari.Value(0)) == "Value(margin=0, outcome='draw')"
    assert awari.Value(1) == awari.Value(1) and int(awari.Value(-4)) == -4
    assert tb.probe(" ".join(map(str, p))) == tb.probe(tuple(p)) == v
    assert tb.probe("1,1,1,1,0,0,0,0,1,1,1,1").margin == 4  # the crate's doc example


def error_of(f, *args):
    with pytest.raises(Exception) as e:
        f(*args)
    return type(e.value), str(e.value)


def test_bad_positions_in_the_cli_words(dbs):
    root = dbs["raw"]
    tb = awari.open(root, rules="awari")
    zeros = [0] * 11
    # What `awari query` says of the same counts, after "error: ".
    same = {
        "negative": [-1] + zeros,
        "too many seeds": [100] + zeros,
        "more than a board holds": [2**40] + zeros,
        "missing level": [MAX_SEEDS + 1] + zeros,
    }
    cli = cli_json(root, "awari", list(same.values()))
    for (what, p), c in zip(same.items(), cli):
        assert error_of(tb.probe, p) == (ValueError, c["error"]), what
        assert error_of(tb.moves, p) == (ValueError, c["error"]), what
        assert error_of(tb.probe_many, [[0] * 12, p]) == (ValueError, "row 1: " + c["error"]), what
    assert "run `awari build --max-seeds 15" in cli[-1]["error"]
    # Non-integers: the command line's words for a count it cannot read.
    for bad in [1.5, "x", None, 2.0]:
        assert error_of(tb.probe, [bad] + zeros) == (ValueError, f"'{bad}' is not a number of seeds")
    assert error_of(tb.probe, "1 x 1 1") == (ValueError, "'x' is not a number of seeds")
    # Wrong numbers of pits: the library's words (a Tablebase holds any board size).
    for n in [0, 3, 11, 13, 18]:
        msg = f"a position is 4 to 16 pit counts, an even number (both sides), not {n}"
        assert error_of(tb.probe, [1] * n) == (ValueError, msg)
    assert error_of(tb.probe, [1] * 10) == (
        ValueError,
        "no awari database of 5 pits per side here (held: [6])",
    )
    assert error_of(tb.probe, 12)[0] is TypeError  # not a sequence at all
    assert error_of(tb.line, [-1] + zeros) == (ValueError, cli[0]["error"])


def test_bad_batches_name_the_row(dbs):
    tb = awari.open(dbs["raw"], rules="oware")
    good = [1] * 12
    assert error_of(tb.probe_many, [good, good, [1, 2]]) == (
        ValueError,
        "row 2: a position is 4 to 16 pit counts, an even number (both sides), not 2",
    )
    assert error_of(tb.probe_many, [good, [1.5] * 12]) == (ValueError, "row 1: '1.5' is not a number of seeds")
    assert error_of(tb.probe_many, "1 1 1 1")[0] is TypeError
    assert tb.probe_many([]) == []
    np = pytest.importorskip("numpy")
    a = np.ones((5, 12), dtype=np.int8)
    a[3, 0] = -1
    assert error_of(tb.probe_many, a) == (
        ValueError,
        "row 3: '-1' is negative: pit counts are 0 or more seeds",
    )
    assert error_of(tb.probe_many, np.ones((5, 12)))[1] == "row 0: '1.0' is not a number of seeds"
    assert error_of(tb.probe_many, np.ones(12, dtype=np.uint8))[0] is ValueError
    assert error_of(tb.probe_many, np.ones((2, 11), dtype=np.uint8))[1].startswith("row 0: a position is 4 to 16")
    assert tb.probe_many(np.zeros((0, 12), dtype=np.uint8)).tolist() == []


def test_bad_folders(dbs, tmp_path):
    missing = tmp_path / "nowhere"
    assert error_of(awari.open, missing) == (FileNotFoundError, f"{missing}: no such folder")
    assert error_of(awari.open, str(missing)) == (FileNotFoundError, f"{missing}: no such folder")
    kind, msg = error_of(awari.open, dbs["raw"])
    assert kind is ValueError and msg.endswith("holds databases of several rule sets (awari, oware): name the one to open")
    assert error_of(awari.open, tmp_path) == (
        ValueError,
        f"{tmp_path} holds no database (folders named like awari-6); build one with `awari build`",
    )
    assert error_of(awari.open, dbs["raw"], "chess") == (
        ValueError,
        "unknown rule set 'chess' (expected 'awari' or 'oware')",
    )
    # A level that is missing from the folder, below one that is present.
    root = tmp_path / "holes"
    shutil.copytree(dbs["raw"] / "awari-6", root / "awari-6")
    (root / "awari-6" / "level-003.awl").unlink()
    tb = awari.open(root)
    p = [0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0]
    (c,) = cli_json(root, "awari", [p])
    assert error_of(tb.probe, p) == (ValueError, c["error"])
    assert "level 3 (awari, 6 pits per side) is not built" in c["error"]
    # A damaged level: an OSError that names the file.
    level = root / "awari-6" / "level-004.awl"
    data = bytearray(level.read_bytes())
    data[-1] ^= 0xFF
    level.write_bytes(bytes(data))
    (c,) = cli_json(root, "awari", [[0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0]])
    assert error_of(tb.probe, [0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0]) == (OSError, c["error"])
    assert str(level) in c["error"]


def test_probe_many_releases_the_gil(dbs):
    """While a long batch runs in another thread, this one keeps running: its longest
    pause is well under the batch's time (holding the GIL, it would pause for all of it)."""
    np = pytest.importorskip("numpy")
    tb = awari.open(dbs["raw"], rules="awari")
    a = np.array(random_positions(1000, seed=5) * 1500, dtype=np.uint8)
    tb.probe_many(a[:1000])
    done = threading.Event()
    took = []

    def batch():
        t = time.perf_counter()
        tb.probe_many(a)
        took.append(time.perf_counter() - t)
        done.set()

    # The clock starts before the thread: a batch that held the GIL from its start to
    # its end would be one long pause here.
    longest, last = 0.0, time.perf_counter()
    worker = threading.Thread(target=batch)
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    longest = max(longest, time.perf_counter() - last)
    worker.join()
    assert longest < took[0] / 2, (longest, took[0])


def test_the_stubs_name_what_the_module_has():
    stub = Path(awari.__file__).with_name("__init__.pyi")
    assert stub.is_file() and stub.with_name("py.typed").is_file()
    tree = ast.parse(stub.read_text())
    top = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert {"Tablebase", "Value", "open"} <= top
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name in ("Tablebase", "Value"):
            declared = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
            real = {m for m in dir(getattr(awari, cls.name)) if not m.startswith("_")}
            assert real == {m for m in declared if not m.startswith("_")}, cls.name
