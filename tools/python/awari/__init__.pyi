import os
from typing import Any, Literal, Sequence, SupportsIndex, TypedDict, Union, overload

__version__: str

# A position: the 2P pit counts, side to move first, as ints or as one string
# ("1 1 1 1 1 2 4 2 3 0 0 0", commas allowed).
Position = Union[Sequence[SupportsIndex], str]

class MoveValue(TypedDict):
    pit: int
    value: int
    captured: int
    ends_game: bool
    distance: int | None

class Analysis(TypedDict):
    """What `awari query --json` prints."""

    rules: str
    pits: list[int]
    seeds: int
    value: int
    stored: bool
    moves: list[MoveValue]
    best: list[int]
    game_over: str | None
    distance: int | None

class Ply(TypedDict):
    player: int
    pit: int
    captured: int
    after: list[int]

class Line(TypedDict):
    """The "line" of `awari query --json --line`."""

    plies: list[Ply]
    end: str
    score: list[float]

class Value:
    """The value of a position for the side to move; str() is `margin 0, a draw`."""

    def __init__(self, margin: int) -> None: ...
    @property
    def margin(self) -> int: ...
    @property
    def outcome(self) -> Literal["win", "draw", "loss"]: ...
    def __int__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Tablebase:
    """The databases of one rule set in a folder; levels raw or packed."""

    @property
    def rules(self) -> Literal["awari", "oware"]: ...
    @property
    def pits(self) -> list[int]: ...
    @property
    def path(self) -> str: ...
    def probe(self, position: Position) -> Value: ...
    def moves(self, position: Position) -> Analysis: ...
    def line(self, position: Position, max_plies: int = 10000) -> Line: ...
    def distance(self, position: Position) -> int | None:
        """Plies to the next capture or the game's end, both sides keeping the value;
        None for a draw, a game over, or a level without a distance table."""
    def best_move(self, position: Position) -> int | None:
        """The pit perfect play takes (by the distance tables where there are some);
        None when the game is over."""
    @overload
    def probe_many(self, positions: Sequence[Position]) -> list[int]: ...
    @overload
    def probe_many(self, positions: Any) -> Any:
        """A 2-D NumPy array in, a NumPy int8 array of margins out."""
    def levels(self) -> list[tuple[int, int, Literal["raw", "packed"]]]: ...

def open(path: str | os.PathLike[str], rules: Literal["awari", "oware"] | None = None) -> Tablebase:
    """Opens the databases under `path` (a folder from `awari build --dir`, or one
    database folder such as db/awari-6). FileNotFoundError if it does not exist,
    ValueError if it holds none or several rule sets and `rules` is not given."""
