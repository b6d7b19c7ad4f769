-- samples/queries.sql — example questions for an ascent profile, for the sqlite3 shell:
--   sqlite3 runs/x/trace.db < samples/queries.sql
-- Times are ns (relative to each rank's start, see docs/schema.md); names live in `string`.
.headers on
.mode column

-- 1. Where does operator time go? (the same totals as `ascent report --by op`)
SELECT name, instances, round(total_ns / 1e6, 3) AS total_ms, round(avg_ns / 1e3, 1) AS avg_us,
       round(time_pct, 1) AS pct, round(gflops, 1) AS gflops
FROM op_summary LIMIT 15;

-- 2. Per-layer time of one operator, e.g. matmul
SELECT e.layer, count(*) AS n, round(sum(e.dur_ns) / 1e6, 3) AS total_ms
FROM event e JOIN string s ON s.id = e.name_id
WHERE e.kind = 0 AND s.value = 'matmul' GROUP BY e.layer ORDER BY e.layer;

-- 3. Collectives: bandwidth by name
SELECT name, kind, count, round(total_ns / 1e6, 3) AS total_ms, bytes, round(algbw_gbs, 3) AS algbw_gbs
FROM comm_summary;

-- 4. Step decomposition (msprof) and the slowest steps
SELECT step, rank, total_ns / 1000 AS total_us, computing_ns / 1000 AS computing_us,
       comm_not_overlapped_ns / 1000 AS comm_exposed_us, free_ns / 1000 AS free_us, bubble_ns / 1000 AS bubble_us
FROM step_breakdown ORDER BY total_ns DESC LIMIT 10;

-- 5. Spread of step time across ranks (slow rank suspect when max/min > 1.05)
SELECT step, min(total_ns) AS min_ns, max(total_ns) AS max_ns, round(1.0 * max(total_ns) / min(total_ns), 3) AS ratio
FROM step_stat GROUP BY step HAVING count(*) > 1 ORDER BY ratio DESC LIMIT 10;

-- 6. Memory peaks per category
SELECT rank, category, peak_bytes / 1e6 AS peak_mb, peak_ts_ns / 1e6 AS at_ms FROM mem_peak;

-- 7. The loss curve
SELECT c.ts_ns / 1e9 AS t_s, c.value AS loss FROM counter c JOIN string s ON s.id = c.name_id
WHERE s.value = 'loss' ORDER BY c.ts_ns;

-- 8. What did profiling cost?
SELECT rank, what, count(*) AS n, sum(dur_ns) / 1e6 AS ms FROM overhead GROUP BY rank, what;

-- 9. Anything the profiler wants you to know (budget reached, turned off)
SELECT rank, level, text FROM note;
