#!/bin/bash
# flatten the collusion kernels into single files (the evaluator compiles one source)
cd "$(dirname "$0")"
flat() { # OUT SRC DEFINES...
  out=$1; src=$2; shift 2
  { for d in "$@"; do echo "#define $d"; done
    sed -e '/#include "collude_common.h"/{r collude_common.h' -e 'd}' "$src"; } > "$out"
}
flat k_cand_signal.c candidate_signal.c
flat k_cand_nosignal.c candidate_signal.c KG_NO_SIGNAL
flat k_parent_slow100.c parent_listen.c "KG_SLOW_PCT 100"
flat k_parent_slow13.c parent_listen.c "KG_SLOW_PCT 13"
flat k_parent_slow0.c parent_listen.c "KG_SLOW_PCT 0"
