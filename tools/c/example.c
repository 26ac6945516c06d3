/*
 * example.c: probe a position through awari.h and print its value and its moves'
 * values as `awari query` prints them (the board drawing and the rule set's name
 * left out).
 *
 *   example DB [COUNTS...]
 *
 * DB is the folder given to `awari build --dir`; COUNTS the 2P pit counts, side to
 * move first (default: the README's example, 1 1 1 1 1 2 4 2 3 0 0 0). On an error it
 * prints `error: <message>` on stderr and exits with 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "awari.h"

static int fail(void) {
    fprintf(stderr, "error: %s\n", awari_last_error());
    return 1;
}

/* `awari query`'s words for a value. */
static void verdict(int v) {
    if (v == 0)
        printf("draw");
    else if (v > 0)
        printf("wins by %d", v);
    else
        printf("loses by %d", -v);
}

int main(int argc, char **argv) {
    static const unsigned char readme[] = {1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0};
    unsigned char counts[16];
    size_t n = 0, len = 0, i, j;
    int value, seeds = 0, rc;
    awari_move moves[AWARI_MAX_MOVES];
    awari_tb *tb;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DB [COUNTS...]\n", argv[0]);
        return 2;
    }
    if (argc == 2) {
        for (n = 0; n < sizeof readme; n++)
            counts[n] = readme[n];
    } else {
        for (i = 2; i < (size_t)argc; i++) {
            char *end;
            long c = strtol(argv[i], &end, 10);
            if (*end != '\0' || c < 0 || c > 255 || n == sizeof counts) {
                fprintf(stderr, "error: '%s': not a pit count, or too many\n", argv[i]);
                return 2;
            }
            counts[n++] = (unsigned char)c;
        }
    }
    for (i = 0; i < n; i++)
        seeds += counts[i];

    tb = awari_open(argv[1]);
    if (tb == NULL)
        return fail();
    rc = awari_moves(tb, counts, n, moves, AWARI_MAX_MOVES, &len, &value);
    if (rc != AWARI_OK) {
        rc = fail();
        awari_close(tb);
        return rc;
    }

    printf("%d seeds: value %+d for the side to move (", seeds, value);
    verdict(value);
    printf(")\n");
    if (len > 0)
        printf("%5s %6s %9s\n", "move", "value", "captures");
    for (j = 0; j < len; j++) {
        const awari_move *m = &moves[j];
        /* A best move is one worth the position's value. */
        printf("%c (%u) %+6d %9u%s%s\n", 'a' + m->pit, (unsigned)m->pit, m->value,
               (unsigned)m->captured, m->value == value ? "  best" : "",
               m->ends_game ? "  (ends the game)" : "");
    }
    awari_close(tb);
    return 0;
}
