/* db/opstack.c — operators open on each thread while a rank's events are read in start order: who
 * owns a launch, for `diff` (db/diff.c) and `report --by opkernels` (db/opkernels.c). db/internal.h. */
#include "db/internal.h"

#include <stdlib.h>

static struct db_opstack_thread *thread_of(struct db_opstacks *s, int tid, int make)
{
	for (int i = 0; i < s->nth; i++)
		if (s->th[i].tid == tid)
			return &s->th[i];
	if (!make || ARRAY_GROW(s->th, s->nth, s->capth, 8, "following operators"))
		return NULL;
	s->th[s->nth] = (struct db_opstack_thread){ .tid = tid };
	return &s->th[s->nth++];
}

static void pop_ended(struct db_opstack_thread *t, int64_t at)
{
	while (t->n && t->v[t->n - 1].end <= at)
		t->n--;
}

int db_opstack_push(struct db_opstacks *s, int tid, int64_t start_ns, struct db_opframe f)
{
	struct db_opstack_thread *t = thread_of(s, tid, 1);
	if (!t)
		return ASCENT_ENOMEM;
	pop_ended(t, start_ns);
	int rc = ARRAY_GROW(t->v, t->n, t->cap, 16, "following operators");
	if (!rc)
		t->v[t->n++] = f;
	return rc;
}

const struct db_opframe *db_opstack_open(struct db_opstacks *s, int tid, int64_t at, int *n)
{
	struct db_opstack_thread *t = thread_of(s, tid, 0);
	if (t)
		pop_ended(t, at);
	*n = t ? t->n : 0;
	return t && t->n ? t->v : NULL;
}

int db_opstack_first(const struct db_opframe *v, int i)
{
	for (int j = 0; j < i; j++)
		if (v[j].name_id == v[i].name_id)
			return 0;
	return 1;
}

void db_opstack_clear(struct db_opstacks *s)
{
	for (int i = 0; i < s->nth; i++)
		s->th[i].n = 0;
}

void db_opstack_free(struct db_opstacks *s)
{
	for (int i = 0; i < s->nth; i++)
		free(s->th[i].v);
	free(s->th);
	s->th = NULL;
	s->nth = s->capth = 0;
}
