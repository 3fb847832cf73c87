#!/usr/bin/env bash
# nanoGPT's CPU "baby GPT" on Tiny Shakespeare (characters as tokens): 4 layers, 4 heads,
# embedding 128, block 64, batch 12, 2000 iterations, dropout 0, warm-up + cosine lr.
# Usage: examples/gpt_shakespeare_char.sh [path/to/input.txt] [extra section.key=value ...]
set -euo pipefail
DATA=${1:-../shared/data/tinyshakespeare/input.txt}
shift || true
OUT=${OUT:-out-shakespeare-char}
sporeling-transformer train gpt_shakespeare_char "data.path=$DATA" "output_dir=$OUT" "$@"
sporeling-transformer eval "$OUT"           # the 20 fixed batches the run validated on
sporeling-transformer eval "$OUT" --whole   # the windows tiling the validation split
sporeling-transformer generate "$OUT" --prompt $'ROMEO:\n' --prompt $'\n' --max-new-tokens 300 --seed 0
