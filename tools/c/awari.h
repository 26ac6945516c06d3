/*
 * awari.h: the C interface of the awari tablebase library (Awari/Oware endgame
 * databases). Link with libawari_c (built by `cargo build --release --manifest-path
 * tools/c/Cargo.toml`); see tools/c/README.md.
 *
 * A position is its pit counts, side to move first: 2P counts for P pits per side
 * (P from 2 to 8; 12 counts for the usual 6 pits), each side's pits counter-clockwise
 * from its leftmost, as `awari query` takes them. A value is the final margin for the
 * side to move under perfect play: seeds it captures from now on minus the opponent's
 * (> 0 a win, 0 a draw, < 0 a loss).
 *
 * Errors: functions return AWARI_OK or a negative awari_error (awari_open NULL), and
 * awari_last_error() says why in one line, the words of `awari query`.
 *
 * Threads: one awari_tb may be probed from several threads at once. The last error is
 * per thread.
 *
 * tools/c/tests/header.rs checks this file against tools/c/src/lib.rs.
 */
#ifndef AWARI_H
#define AWARI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most legal moves of a position (one per pit of the side to move): an array
 * of AWARI_MAX_MOVES awari_move always holds the moves of awari_moves. */
#define AWARI_MAX_MOVES 8

/* What went wrong: the return codes, 0 or negative. */
typedef enum {
    AWARI_OK = 0,
    /* A bad argument: a NULL pointer, counts that are not a position (odd count,
     * too many seeds), a board size or rule set the folder does not hold, an out
     * array too small. */
    AWARI_EINPUT = -1,
    /* A level the answer needs is not built; the message names the `awari build`
     * command that builds it. */
    AWARI_EMISSING = -2,
    /* Reading a file or folder failed (no such folder, permissions). */
    AWARI_EIO = -3,
    /* A file is damaged, truncated or of another format. */
    AWARI_EFORMAT = -4,
    /* A bug in the library: it panicked (the panic was caught; please report it). */
    AWARI_EPANIC = -5,
    /* Anything else: a folder in use by a build, too little memory. */
    AWARI_EOTHER = -6
} awari_error;

/* An open tablebase: the databases of one rule set in a folder, every board size.
 * Opaque; free it with awari_close. */
typedef struct awari_tb awari_tb;

/* One legal move and its value. */
typedef struct {
    unsigned char pit;       /* the pit sowed from, 0-based, side to move */
    signed char value;       /* the final margin for the side to move after it */
    unsigned char captured;  /* seeds the move captures */
    unsigned char ends_game; /* 1 if the game ends with it (the mover takes the rest) */
} awari_move;

/* Opens the databases under `path` (NUL-terminated): a root folder as given to
 * `awari build --dir` holding one rule set (folders such as awari-6), or one database
 * folder such as "db/awari-6". Levels are read on first use. NULL on failure. */
awari_tb *awari_open(const char *path);

/* As awari_open, for the rule set named `rules` ("awari" or "oware"; NULL: the one
 * the folder holds), where a folder holds both. */
awari_tb *awari_open_rules(const char *path, const char *rules);

/* Frees `tb` (NULL: nothing). */
void awari_close(awari_tb *tb);

/* The value of the position of the `n` pit counts `counts`, stored in `*margin`.
 * Returns AWARI_OK or an awari_error (then `*margin` is left alone). */
int awari_probe(const awari_tb *tb, const unsigned char *counts, size_t n, int *margin);

/* The value of the position (`*value`) and of each legal move in pit order: `*len`
 * moves written to `out`, which holds `cap` (AWARI_MAX_MOVES always suffices). No
 * moves when the game is over. The best moves are those whose value is `*value`.
 * Returns AWARI_OK or an awari_error; AWARI_EINPUT when `cap` is too small, `*len`
 * then saying how many are needed. */
int awari_moves(const awari_tb *tb, const unsigned char *counts, size_t n,
                awari_move *out, size_t cap, size_t *len, int *value);

/* The distance to conversion of the position, stored in `*plies`: the plies to the
 * next capture or the game's end when both sides keep the value, the winner converting
 * as soon as it can and the loser as late as it can; 0 for a draw, a game over, or a
 * level without a distance table (`awari dtc` makes them). Returns AWARI_OK or an
 * awari_error (then `*plies` is left alone). */
int awari_distance(const awari_tb *tb, const unsigned char *counts, size_t n, int *plies);

/* The move perfect play makes in the position, its pit (0-based, side to move) in
 * `*pit`, -1 when the game is over: a best move; where the level has a distance table,
 * the winner's of least distance and the loser's of most, so that a won game is
 * converted rather than played round a cycle. Returns AWARI_OK or an awari_error. */
int awari_best_move(const awari_tb *tb, const unsigned char *counts, size_t n, int *pit);

/* The message of this thread's last failure, "" after a success (never NULL). Valid
 * until the next call of this library on this thread. */
const char *awari_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AWARI_H */
