#!/usr/bin/env bash
# tests/integration/dist_tp_pp.sh — tensor and pipeline parallelism train the same model as one
# process: with the same seed and global batch, 20 fp32 steps give the same loss per step
# (relative difference <= 1e-5) for TP=2, TP=4, PP=2 with gpipe, 1f1b and interleaved (V=2), PP=2
# with recomputation, PP=4 interleaved (8 layers, V=2), and DP=2 x TP=2 x PP=2 on 8 ranks (which
# also sums the tied embedding's two copies across stages and reduces over DP). A wrong TP slice,
# a missed f/g allreduce, activations or gradients sent to the wrong micro-batch or chunk, or a
# tied-embedding gradient that is not summed moves the loss by far more than the tolerance.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
train 1 one "${SMALL[@]}"
train 2 tp2 "${SMALL[@]}" --tp 2
same_loss one tp2 1e-5
train 4 tp4 "${SMALL[@]}" --tp 4
same_loss one tp4 1e-5
for s in gpipe 1f1b; do
  train 2 pp2$s "${SMALL[@]}" --pp 2 --schedule $s --microbatches 4
  same_loss one pp2$s 1e-5
done
train 2 pp2il "${SMALL[@]}" --pp 2 --schedule interleaved --virtual-stages 2 --microbatches 4
same_loss one pp2il 1e-5
train 2 pp2rc "${SMALL[@]}" --pp 2 --microbatches 2 --recompute
same_loss one pp2rc 1e-5
train 8 d2t2p2 "${SMALL[@]}" --dp 2 --tp 2 --pp 2 --microbatches 2
same_loss one d2t2p2 1e-5
grep -q "layout: 8 rank(s) = dp 2 x tp 2 x pp 2" d2t2p2/logs/rank-00007.log
# 8 layers: 4 stages x 2 virtual stages, one layer per chunk
train 1 one8 "${SMALL[@]}" --n-layer 8
train 4 pp4il "${SMALL[@]}" --n-layer 8 --pp 4 --schedule interleaved --virtual-stages 2 --microbatches 4
same_loss one8 pp4il 1e-5
echo ok
