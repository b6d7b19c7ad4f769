#!/usr/bin/env bash
# import_shared.sh — `ascent import` of every real trace of the shared data folder, alone and in
# pairs, then `report` and `view` of each profile (shared_inputs.py; sanitized under `make check`).
# Skipped when the folder is absent (set ASCENT_SHARED_DATA).
set -euo pipefail
python3 "$ASCENT_ROOT/tests/integration/shared_inputs.py" real
