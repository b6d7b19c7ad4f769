/* viewer/run.c — `ascent view`: open the profile, then either print one view as plain text
 * (--dump VIEW --size WxH) or run the interactive TUI. */
#include "viewer/internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int viewer_dump(struct viewer *v, int view, int w, int h, FILE *f)
{
	if (view < 0 || view >= VW_NALL || view == VW_INSTANCES)
		return ascent_error(ASCENT_EUSAGE, "no view %d", view);
	if ((view == VW_DIFF || view == VW_DIFFROW) && !v->adb)
		return ascent_error(ASCENT_EUSAGE, "--dump %s compares two profiles: give the other with --against A.db",
				    vw_view_name(view));
	struct vw_screen s;
	int rc = vw_screen_init(&s, w, h);
	if (rc)
		return rc;
	v->view = view;
	v->ncrumbs = 0;
	if (view == VW_DIFFROW) {   /* the diff's first row, as Enter on it shows it */
		v->view = VW_DIFF;
		if ((rc = viewer_render(v, &s)) == 0 && (rc = viewer_key(v, VK_ENTER)) != 0)
			vw_screen_release(&s);
		if (rc)
			return rc;
	}
	rc = viewer_render(v, &s);
	if (!rc)
		vw_screen_print(&s, f);
	vw_screen_release(&s);
	return rc;
}

int viewer_run(const struct viewer_run_options *ro)
{
	struct viewer_options o = ro->o;
	int view = -1;
	/* ranks-heat, ranks-heat-ranks: the ranks view's heat map by host pair, by rank pair ('m') */
	int heat = !ro->dump ? VW_HEAT_OFF : !strcmp(ro->dump, "ranks-heat") ? VW_HEAT_HOSTS
					  : !strcmp(ro->dump, "ranks-heat-ranks") ? VW_HEAT_RANKS : VW_HEAT_OFF;
	if (ro->dump && (view = heat ? VW_RANKS : vw_view_by_name(ro->dump)) < 0)
		return ascent_error(ASCENT_EUSAGE, "--dump '%s': no such view (overview, ops, comm, steps, ranks, ranks-heat, "
				    "ranks-heat-ranks, memory, timeline, devices; with --against: diff, diff-row)", ro->dump);
	if (!ro->dump && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		return ascent_error(ASCENT_EUSAGE, "'ascent view' needs a terminal; for a script use --dump VIEW "
				    "(e.g. ascent view %s --dump ops --size 120x40)", o.path ? o.path : "RUN.db");
	if (!ro->dump && !getenv("TERM"))
		return ascent_error(ASCENT_EUSAGE, "TERM is not set: cannot draw the viewer (use --dump VIEW for text)");
	struct viewer *v;
	int64_t built = 0;
	int rc = viewer_open(&o, &v, &built);
	if (rc)
		return rc;
	if (built > 500 && !ro->dump)
		log_info("built the viewer's summary of %s in %.1f s (kept in the file for next time)", o.path,
			 (double)built / 1e3);
	if (ro->dump && heat)
		rc = vw_heat_set(v, heat);
	if (ro->dump && !rc)
		rc = viewer_dump(v, view, ro->width > 0 ? ro->width : 120, ro->height > 0 ? ro->height : 40, stdout);
	else
		rc = viewer_tui(v, o.mono || getenv("NO_COLOR") != NULL);
	viewer_free(v);
	return rc;
}
