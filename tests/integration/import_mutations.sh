#!/usr/bin/env bash
# import_mutations.sh — damaged copies of every real trace of the shared data folder (cut short,
# bytes flipped, huge, negative and text times, sizes past int64, columns missing, BLOB names):
# each import ends in a readable profile or a clean exit 2 (shared_inputs.py; sanitized under
# `make check`). Skipped when the folder is absent (set ASCENT_SHARED_DATA).
set -euo pipefail
python3 "$ASCENT_ROOT/tests/integration/shared_inputs.py" mutations
