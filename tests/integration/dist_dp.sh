#!/usr/bin/env bash
# tests/integration/dist_dp.sh — data parallelism is the same training as one process: with the
# same seed and global batch, 20 fp32 steps give the same loss per step (relative difference
# <= 1e-5; we see ~1e-7, the rounding of summing the gradient in another order) for DP=2, DP=4,
# ZeRO-1 and ZeRO-2 at DP=2 and DP=4, ZeRO-2 with DP=2 x interleaved PP=2, DP=2 with recomputation and with small buckets (many
# collectives in flight); and --grad-accum 4 equals a 4x batch, in one process and under DP=2
# ZeRO-2. A wrong slice of the batch, a missing or doubled reduction, a wrong ZeRO shard or a bad
# allgather changes the losses by far more than the tolerance.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
train 1 one "${SMALL[@]}"
train 2 dp2 "${SMALL[@]}" --dp 2
same_loss one dp2 1e-5
train 4 dp4 "${SMALL[@]}" --dp 4
same_loss one dp4 1e-5
for z in 1 2; do
  train 2 z${z}dp2 "${SMALL[@]}" --dp 2 --zero $z
  same_loss one z${z}dp2 1e-5
  train 4 z${z}dp4 "${SMALL[@]}" --dp 4 --zero $z
  same_loss one z${z}dp4 1e-5
done
# ZeRO-2's gradient window with several chunks per rank and micro-batches in flight
train 4 z2pp2 "${SMALL[@]}" --dp 2 --pp 2 --zero 2 --schedule interleaved --virtual-stages 2 --microbatches 2
same_loss one z2pp2 1e-5
train 2 dp2rc "${SMALL[@]}" --dp 2 --recompute --bucket-mb 0.01
same_loss one dp2rc 1e-5
# the global loss, not rank 0's: both ranks' logs say the same step loss
grep -q "layout: 2 rank(s) = dp 2 x tp 1 x pp 1" dp2/logs/rank-00001.log
[[ -f dp2/logs/rank-00000.log && -f dp2/logs/rank-00001.log && ! -e dp2/logs/rank-00002.log ]]

# gradient accumulation: 4 rounds of 8 = one batch of 32
train 1 b32 "${SMALL[@]}" --batch 32
train 1 ga4 "${SMALL[@]}" --batch 8 --grad-accum 4
same_loss b32 ga4 1e-5
train 2 ga4z2 "${SMALL[@]}" --batch 8 --grad-accum 4 --dp 2 --zero 2
same_loss b32 ga4z2 1e-5
echo ok
