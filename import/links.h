/* import/links.h — pairing link ends (imp_flow) in memory while a file is read, within a bounded
 * window. Internal to import/ (the sink uses it).
 *
 * A link is (rank, kind, id) within one input file: its first start, in the order the ends
 * arrived, pairs with every end of the id; every other end (a second start, an end with no start,
 * a start with no end) is unpaired. db_flow_pair does exactly this over ends staged in the output;
 * links.c gives the same links and the same unpaired count without staging most of them:
 *
 *   - an id is held in memory from its first end on, with its start and the ends that came
 *     before it; each end that finds its start becomes a link at once (links_out.link);
 *   - at most LINKS_WINDOW ids are held: the oldest leaves the window (evicted) when a new one
 *     needs room, and its state is kept in a temporary file (created beside the output and
 *     unlinked at once) and its key in a Bloom filter;
 *   - an end whose id is not held but may have been evicted (the filter says so; it may be wrong,
 *     never the other way round) is staged for db_flow_pair (links_out.stage), and so are all
 *     later ends of that id (the filter only grows within a file);
 *   - at the end of the file: the ids still held are settled in memory; the evicted states of
 *     the ids that have staged ends (a second filter says which; it may say too many) are staged
 *     too (a start that already made its link is staged as `used`), so db_flow_pair settles those
 *     ids from their whole history; the other evicted ids were settled when they left.
 * Ends of one file (the usual case: a launch and its kernel are close in a Kineto trace) never
 * reach SQLite except as links. */
#ifndef ASCENT_IMPORT_LINKS_H
#define ASCENT_IMPORT_LINKS_H

#include "db/db.h"

#include <stdint.h>

#define LINKS_WINDOW 65536   /* ids held in memory at once */

struct links;

/* Where links and staged ends go (the sink's batches for the writer thread). */
struct links_out {
	int (*link)(void *ud, const struct db_flow *f);
	int (*stage)(void *ud, const struct db_flow_end *e);
	void *ud;
};

/* spill: the path of the temporary file for evicted ids (created on first eviction, unlinked at
 * once: nothing stays behind, even after a crash). window: the ids held at once, 1 to
 * LINKS_WINDOW (≤ 0: LINKS_WINDOW); a small one only makes the import slower (the tests use it
 * to send ids through eviction and staging). */
int links_new(const char *spill, int window, const struct links_out *o, struct links **out /* OUT */);
void links_free(struct links *l);   /* accepts NULL */
/* One end; e->file names the input file (ids are per file), e->seq and e->used are set here. */
int links_end(struct links *l, const struct db_flow_end *e);
/* The input file whose ends came last has ended: settle its ids (see above). */
int links_file_end(struct links *l);
/* Ends settled as unpaired so far (those staged are counted by db_flow_pair). */
int64_t links_unpaired(const struct links *l);
/* Links made in memory so far. */
int64_t links_made(const struct links *l);

#endif
