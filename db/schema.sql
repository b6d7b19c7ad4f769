-- db/schema.sql — the ascent profile database, schema version 5 (PRAGMA user_version = 5,
-- PRAGMA application_id = 0x41534354 "ASCT"). Embedded into the binary (db/schema.c); every
-- table and column is documented with units in docs/schema.md.
--
-- Time: *_ns columns are int64 nanoseconds since the rank's profiler start (rank.t0_ns, a
-- CLOCK_MONOTONIC reading); durations in ns. Rank r's time on rank 0's clock is
--   ts + rank.t0_ns + rank.clock_offset_ns - (rank 0's t0_ns).
-- Names are interned in `string`; events hold ids. Indexes are created after the bulk insert by
-- db_finalize() (the statements at the end of this file, after the marker line).

CREATE TABLE IF NOT EXISTS meta(          -- key/value facts: schema_version, tool_version, created_utc, host, ...
  key   TEXT PRIMARY KEY,
  value TEXT
);

CREATE TABLE IF NOT EXISTS run(           -- one row: how the run was started
  id           INTEGER PRIMARY KEY,
  command_line TEXT,                      -- argv joined by spaces
  config_json  TEXT,                      -- the resolved configuration
  world_size   INTEGER,                   -- number of ranks
  created_utc  TEXT                       -- ISO 8601 UTC
);

CREATE TABLE IF NOT EXISTS rank(          -- one row per rank
  rank                INTEGER PRIMARY KEY,
  host                TEXT,
  pid                 INTEGER,
  dp_rank             INTEGER,            -- -1 unknown
  tp_rank             INTEGER,
  pp_rank             INTEGER,
  threads             INTEGER,            -- threads that recorded events
  t0_ns               INTEGER,            -- CLOCK_MONOTONIC at profiler start (absolute ns)
  t0_utc_ns           INTEGER,            -- CLOCK_REALTIME at the same moment (ns since epoch)
  clock_offset_ns     INTEGER,            -- rank 0's clock minus this rank's, measured at start
  clock_err_ns        INTEGER,            -- its uncertainty (±)
  clock_offset_end_ns INTEGER,            -- the same measured at the end (drift = end − start)
  clock_err_end_ns    INTEGER,
  end_ns              INTEGER             -- last recorded time (relative ns)
);

CREATE TABLE IF NOT EXISTS string(        -- interned names
  id    INTEGER PRIMARY KEY,
  value TEXT NOT NULL UNIQUE
);

CREATE TABLE IF NOT EXISTS thread(        -- recording threads of each rank
  rank   INTEGER NOT NULL,
  tid    INTEGER NOT NULL,                -- small per-rank index used in event.tid
  os_tid INTEGER,                         -- Linux thread id
  name   TEXT,
  PRIMARY KEY(rank, tid)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS comm(          -- communicators (for bus bandwidth)
  rank         INTEGER NOT NULL,
  comm_id      INTEGER NOT NULL,
  name         TEXT,                      -- world, dp, tp, pp, ...
  size         INTEGER,                   -- members
  rank_in_comm INTEGER,
  PRIMARY KEY(rank, comm_id)
) WITHOUT ROWID;
-- db_put_comm replaces a rank's communicator by name: found by this index, not a scan of the
-- rank's communicators (an imported trace may hold 40,000 process groups)
CREATE INDEX IF NOT EXISTS comm_rank_name ON comm(rank, name);

-- One row per recorded range. Clustered by (rank, start_ns): the primary key is that index.
CREATE TABLE IF NOT EXISTS event(
  rank     INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,              -- relative ns
  tid      INTEGER NOT NULL,              -- thread.tid
  kind     INTEGER NOT NULL,              -- 0 op, 1 comm, 2 p2p, 3 step, 4 phase, 5 data, 6 io, 7 checkpoint, 8 range, 9 microbatch, 10 wait,
                                          -- 11 kernel, 12 memcpy, 13 memset (device lanes, v2)
  name_id  INTEGER NOT NULL,              -- string.id
  dur_ns   INTEGER NOT NULL,              -- ns
  step     INTEGER,                       -- training step, NULL none
  mb       INTEGER,                       -- micro-batch, NULL none
  layer    INTEGER,                       -- transformer block, NULL none
  bytes    INTEGER,                       -- comm/p2p message bytes
  flops    INTEGER,                       -- op floating point operations, NULL unknown
  peer     INTEGER,                       -- p2p peer rank / collective root
  comm_id  INTEGER,                       -- communicator (comm.comm_id)
  seq      INTEGER,                       -- sequence number on the communicator
  stack_id INTEGER,                       -- stack.stack_id at range begin
  site_id  INTEGER,                       -- string.id of "file.c:LINE"
  ord      INTEGER NOT NULL DEFAULT 0,    -- v4: tells apart events equal in all the key's other columns: the event's ordinal on
                                          -- its lane (profiler, import) or its row id in the source (SQLite exports); 0 before v4
  PRIMARY KEY(rank, start_ns, tid, kind, name_id, dur_ns, ord)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS device_lane(   -- v2: lanes (thread.tid) that are a device stream, not a CPU thread
  rank   INTEGER NOT NULL,
  tid    INTEGER NOT NULL,                -- thread.tid of the lane
  device INTEGER NOT NULL,                -- device index on its host (GPU 0, 1, ...)
  stream INTEGER NOT NULL,                -- stream (queue) on that device; -1: the device's CUPTI counter ranges (DB_STREAM_COUNTERS)
  PRIMARY KEY(rank, tid)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS arg(           -- v2: an imported event's arguments, as the source wrote them
  rank     INTEGER NOT NULL,              -- the event's key: rank, tid, start_ns, kind, name_id, dur_ns, ord
  tid      INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  kind     INTEGER NOT NULL,
  name_id  INTEGER NOT NULL,
  dur_ns   INTEGER NOT NULL,
  ord      INTEGER NOT NULL DEFAULT 0,    -- v4: the event's ord (before args: with a NOT NULL column
                                          -- ahead of a key column, SQLite 3.40's integrity_check
                                          -- reports every row's args as NULL, wrongly)
  args     TEXT NOT NULL,                 -- a JSON object ("Input Dims", "External id", ...)
  PRIMARY KEY(rank, start_ns, tid, kind, name_id, dur_ns, ord)   -- v3: clustered as event is (v2: a rowid table and an index)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS flow(          -- v2: links between two events of a rank (imported traces)
  rank    INTEGER NOT NULL,
  kind    INTEGER NOT NULL,               -- 0 launch -> kernel (Kineto ac2g), 1 forward -> backward (fwdbwd), 2 operator -> its API call
  flow_id INTEGER NOT NULL,               -- the source's id of the link
  src_tid INTEGER NOT NULL,               -- where it starts: lane and time (the launch)
  src_ns  INTEGER NOT NULL,
  dst_tid INTEGER NOT NULL,               -- where it ends (the kernel's start)
  dst_ns  INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS counter(       -- sampled series: loss, lr, loss_scale, tokens_per_s, ...
  rank    INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  ts_ns   INTEGER NOT NULL,
  value   REAL,
  PRIMARY KEY(rank, name_id, ts_ns)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS mem_event(     -- allocations (+bytes) and frees (−bytes)
  rank     INTEGER NOT NULL,
  ts_ns    INTEGER NOT NULL,
  bytes    INTEGER NOT NULL,              -- signed
  category INTEGER NOT NULL,              -- 0 param, 1 grad, 2 optimizer, 3 activation, 4 comm_buffer, 5 workspace, 6 other
  in_use   INTEGER NOT NULL,              -- bytes in use in this category on this device after the event
  stack_id INTEGER,
  device   INTEGER NOT NULL DEFAULT -1    -- v5: where the memory is: -1 the host (CPU), 0, 1, ... the rank's accelerator
                                          -- of that index; -2 not recorded (an imported file before v5, which kept
                                          -- one device per rank without saying which; the profiler's are the host)
);

CREATE TABLE IF NOT EXISTS stack(         -- deduplicated call stacks, depth 0 = innermost frame
  stack_id INTEGER NOT NULL,
  depth    INTEGER NOT NULL,
  frame_id INTEGER NOT NULL,
  PRIMARY KEY(stack_id, depth)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS frame(         -- one code address, symbolized at the end of the run
  frame_id INTEGER PRIMARY KEY,
  ip       INTEGER,                       -- instruction address in the recording process
  symbol   TEXT,                          -- function name or NULL
  module   TEXT,                          -- shared object or executable path
  offset   INTEGER                        -- ip − symbol address (bytes)
);

CREATE TABLE IF NOT EXISTS sample(        -- SIGPROF samples (--profile-sample HZ)
  rank     INTEGER NOT NULL,
  tid      INTEGER NOT NULL,
  ts_ns    INTEGER NOT NULL,
  stack_id INTEGER NOT NULL,
  period_ns INTEGER                       -- CPU time each sample stands for
);

CREATE TABLE IF NOT EXISTS overhead(      -- the profiler's own cost
  rank   INTEGER NOT NULL,
  ts_ns  INTEGER NOT NULL,
  dur_ns INTEGER NOT NULL,
  what   TEXT NOT NULL,                   -- "hooks" (time in hooks, estimated), "writer" (writer thread busy), "finalize"
  count  INTEGER                          -- records concerned
);

CREATE TABLE IF NOT EXISTS note(          -- what the profiler wants the reader to know
  rank  INTEGER NOT NULL,
  ts_ns INTEGER NOT NULL,
  level TEXT NOT NULL,                    -- info, warn, error
  text  TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS step_agg(      -- per-step totals, kept even after the size budget stops detail
  rank     INTEGER NOT NULL,
  step     INTEGER NOT NULL,
  kind     INTEGER NOT NULL,
  name_id  INTEGER NOT NULL,
  count    INTEGER NOT NULL,
  total_ns INTEGER NOT NULL,
  PRIMARY KEY(rank, step, kind, name_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS step_stat(     -- msprof step decomposition, filled by db_finalize
  rank                   INTEGER NOT NULL,
  step                   INTEGER NOT NULL,
  start_ns               INTEGER NOT NULL,
  total_ns               INTEGER NOT NULL,
  computing_ns           INTEGER NOT NULL, -- time with >= 1 op running
  comm_ns                INTEGER NOT NULL, -- time with >= 1 comm/p2p running
  overlapped_ns          INTEGER NOT NULL, -- both
  comm_not_overlapped_ns INTEGER NOT NULL, -- comm − overlapped
  free_ns                INTEGER NOT NULL, -- neither
  bubble_ns              INTEGER NOT NULL, -- receives (pipeline bubble)
  preparing_ns           INTEGER NOT NULL, -- step start → first op or comm
  PRIMARY KEY(rank, step)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS op_stat(       -- per (rank, kind, name) statistics of the events, filled by db_finalize
  rank      INTEGER NOT NULL,             -- -1: all ranks together
  kind      INTEGER NOT NULL,             -- event.kind (steps included: sum(count) of rank -1 = events)
  name_id   INTEGER NOT NULL,
  count     INTEGER NOT NULL,
  total_ns  INTEGER NOT NULL,
  self_ns   INTEGER NOT NULL,             -- total minus time covered by ranges nested inside (same thread)
  min_ns    INTEGER NOT NULL,
  max_ns    INTEGER NOT NULL,
  med_ns    INTEGER NOT NULL,             -- median (mean of the two middle values for an even count)
  p95_ns    INTEGER NOT NULL,             -- nearest-rank 95th percentile
  avg_ns    REAL NOT NULL,
  stddev_ns REAL NOT NULL,                -- sample standard deviation
  flops     REAL,                         -- summed FLOPs of instances that declared them
  flops_ns  INTEGER,                      -- time of those instances
  PRIMARY KEY(rank, kind, name_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS diag_check(    -- results of `ascent diag` stored alongside a profile
  id        INTEGER PRIMARY KEY,
  ts_utc_ns INTEGER,
  name      TEXT NOT NULL,
  status    TEXT NOT NULL,                -- PASS, WARN, FAIL, SKIP
  value     REAL,
  unit      TEXT,
  detail    TEXT
);

CREATE TABLE IF NOT EXISTS quant_layer(   -- per-layer results of `ascent quant`
  id      INTEGER PRIMARY KEY,
  layer   TEXT NOT NULL,
  method  TEXT,
  scale   REAL,
  sqnr_db REAL,
  detail  TEXT
);

CREATE VIEW IF NOT EXISTS op_summary AS   -- per operator: nsys-stats columns (median in `ascent report`)
SELECT s.value AS name,
       count(*) AS instances,
       sum(e.dur_ns) AS total_ns,
       round(100.0 * sum(e.dur_ns) / (SELECT sum(dur_ns) FROM event WHERE kind = 0), 2) AS time_pct,
       avg(e.dur_ns) AS avg_ns,
       min(e.dur_ns) AS min_ns,
       max(e.dur_ns) AS max_ns,
       sqrt(max(avg(e.dur_ns * e.dur_ns) - avg(e.dur_ns) * avg(e.dur_ns), 0)) AS stddev_ns,
       1.0 * sum(e.flops) / nullif(sum(CASE WHEN e.flops IS NOT NULL THEN e.dur_ns END), 0) AS gflops
FROM event e JOIN string s ON s.id = e.name_id
WHERE e.kind = 0
GROUP BY e.name_id
ORDER BY total_ns DESC, instances, name;

CREATE VIEW IF NOT EXISTS comm_summary AS -- per collective / p2p name: count, time, bytes, algorithm bandwidth (GB/s)
SELECT s.value AS name,
       CASE e.kind WHEN 1 THEN 'comm' ELSE 'p2p' END AS kind,
       count(*) AS count,
       sum(e.dur_ns) AS total_ns,
       avg(e.dur_ns) AS avg_ns,
       sum(e.bytes) AS bytes,
       1.0 * sum(e.bytes) / nullif(sum(e.dur_ns), 0) AS algbw_gbs
FROM event e JOIN string s ON s.id = e.name_id
WHERE e.kind IN (1, 2)
GROUP BY e.kind, e.name_id
ORDER BY total_ns DESC;

CREATE VIEW IF NOT EXISTS step_breakdown AS  -- msprof decomposition per rank and step (ns)
SELECT rank, step, total_ns, computing_ns, comm_not_overlapped_ns, overlapped_ns, free_ns,
       bubble_ns, preparing_ns, comm_ns, start_ns
FROM step_stat ORDER BY step, rank;

CREATE VIEW IF NOT EXISTS mem_peak AS     -- peak bytes in use per rank, device (v5) and category, and when
SELECT m.rank,
       m.device,
       CASE m.category WHEN 0 THEN 'param' WHEN 1 THEN 'grad' WHEN 2 THEN 'optimizer'
            WHEN 3 THEN 'activation' WHEN 4 THEN 'comm_buffer' WHEN 5 THEN 'workspace' ELSE 'other' END
         AS category,
       max(m.in_use) AS peak_bytes,
       (SELECT m2.ts_ns FROM mem_event m2 WHERE m2.rank = m.rank AND m2.device = m.device
        AND m2.category = m.category ORDER BY m2.in_use DESC, m2.ts_ns LIMIT 1) AS peak_ts_ns
FROM mem_event m GROUP BY m.rank, m.device, m.category;

-- @@INDEXES@@ (created by db_finalize after the bulk insert)
CREATE INDEX IF NOT EXISTS event_comm ON event(comm_id, seq) WHERE comm_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS event_step ON event(kind, rank, step) WHERE kind = 3;
CREATE INDEX IF NOT EXISTS mem_event_rank_ts ON mem_event(rank, ts_ns);
CREATE INDEX IF NOT EXISTS sample_rank_ts ON sample(rank, ts_ns);
CREATE INDEX IF NOT EXISTS flow_dst ON flow(rank, dst_tid, dst_ns);
