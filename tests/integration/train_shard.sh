#!/usr/bin/env bash
# tests/integration/train_shard.sh — `ascent tokenize` writes an llm.c shard (header, size) that
# `ascent train` and `ascent eval` read, with the same losses as training on the text itself.
set -euo pipefail
cat /usr/share/games/fortunes/{fortunes,wisdom} > corpus.txt
"$ASCENT" tokenize corpus.txt -o corpus.bin | grep -q "tokens"
python3 - <<'PY'
import os, struct
b = open("corpus.bin", "rb").read()
magic, version, n = struct.unpack("<3i", b[:12])
assert magic == 20240520 and version == 1, (magic, version)
text = open("corpus.txt", "rb").read()
assert n == len(text) and len(b) == 1024 + 2 * n, (n, len(text), len(b))
assert list(struct.unpack("<8H", b[1024:1040])) == list(text[:8])
PY
SMALL=(--n-layer 1 --n-head 2 --n-embd 32 --max-seq 32 --seq 32 --batch 4 --steps 3 --threads 1 --eval-batches 2)
"$ASCENT" train --data corpus.bin "${SMALL[@]}" --out on-shard 2>/dev/null
"$ASCENT" train --data corpus.txt "${SMALL[@]}" --out on-text 2>/dev/null
diff <(cut -d, -f2 on-shard/metrics.jsonl) <(cut -d, -f2 on-text/metrics.jsonl)
# a directory with the shard is read the same way
mkdir d && cp corpus.bin d/
"$ASCENT" eval --ckpt on-shard --data d --batch 2 --seq 32 --batches 2 --json --threads 1 | grep -q '"tokens": 128'
echo ok
