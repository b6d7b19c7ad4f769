/* import/part.h — `ascent import -j N`: the input files read at once by N worker processes, each
 * writing its own part (a profile of the files it was given), then combined into OUT.db by the
 * merge path (db_merge_append), as if read one after another.
 *
 * Why processes: a worker is the ordinary import (a reading thread, a writer thread, one SQLite
 * connection, batches of bounded size) in a process of its own, so nothing of the sink is shared,
 * memory is bounded per worker and one worker's failure cannot corrupt another's state. Each part is
 * an unnamed temporary (fs_tmp) the parent opens before it forks, so the child writes it through
 * the inherited descriptor and the parent reads it afterwards; if the parent dies, every part goes
 * with it (the workers die with their parent: PR_SET_PDEATHSIG).
 *
 * What is the import's as a whole, not one file's, the combining process decides from what the
 * parts record (import_part_* tables, sink.c): the process groups' numbers (comm_id: the order of
 * their first use over the files in order) and definitions (the first kept, conflicts counted),
 * the comm rows, the warnings (counts summed, the first place is the earliest file's), the formats
 * read, the run row and the import_* meta. Files that hold the same rank share lanes, an origin
 * and the overlap and session checks, so parts found to share a rank are imported again as one
 * part, their files in order. A failure is reported for the earliest file that fails, as the
 * sequential import would.
 *
 * Shared by several processes (imp_opts.spread, import.h): the same cut into parts on every process,
 * part k read by process k mod K into a named file of a folder beside OUT, the outcomes exchanged,
 * then process 0 goes on as above with those parts (docs/import.md).
 */
#ifndef ASCENT_IMPORT_PART_H
#define ASCENT_IMPORT_PART_H

#include "import/import.h"

/* The files' import as one part (o->part_path set) or as the whole import: open, read each, finish.
 * *failed_at: the index in files of the file whose reading failed (n: the finish failed). */
int imp_run_files(const struct imp_opts *o, const char *const *files, int n, int *failed_at /* OUT */);

/* The parallel import of files[0..n) (folders already expanded) on o->jobs workers; nsummary files of
 * torch_npu folders were not read (summary_first: the first), counted as imp_run counts them. */
int imp_run_parallel(const struct imp_opts *o, const char *const *files, int n, int nsummary, const char *summary_first);

/* A finished profile's hosts' clocks fitted from its collectives (db_clock_fit; what was applied
 * said on msgs, NULL: quiet), then its statistics (db_finalize) and, when view_tables, the viewer's
 * summary tables too, built at the same time on two more connections for jobs of at most 64 ranks
 * (db_finalize_view). */
int imp_finish_tables(struct db *db, int view_tables, FILE *msgs);

/* ---- the combining process's bookkeeping (sink.c): an imp without an output ---- */

/* files: all the import's files in order (kept, not copied: they must outlive it). */
int imp_combine_new(const struct imp_opts *o, const char *const *files, int n, struct imp **out /* OUT */);
/* File `no` was read as `source` (imp_file_facts.source). */
int imp_combine_file(struct imp *c, int no, const char *source);
/* n equal definitions of `group` given while reading file `no` (a part's import_part_call row), replayed in
 * the order of their keys over all the parts: members NULL when not given. */
int imp_combine_call(struct imp *c, int no, const char *group, const char *desc, const int *members, int nmembers,
		     int64_t n);
/* The import-wide index of a group (−1: none) and its comm_id. */
int imp_combine_group(const struct imp *c, const char *group);
int64_t imp_combine_comm_id(int g);
/* The comm row of `rank` (its files' world size rank_world, 0 unknown) in group g, as a sequential import
 * writes it; world: the import's world size. */
int imp_combine_comm(const struct imp *c, struct db *out, int rank, int rank_world, int g, int world);
/* A part's count of warning w, with the key of its first (its place in the import's order) and where. */
int imp_combine_warning(struct imp *c, int w, int64_t n, int64_t key, const char *where);
/* After every part: the formats' list; returns the warnings counted in all. */
int64_t imp_combine_finish(struct imp *c);
const char *imp_combine_sources(const struct imp *c);
/* The warnings, one line per reason, as imp_finish prints them. */
void imp_combine_print(const struct imp *c);
void imp_combine_free(struct imp *c);

#endif
