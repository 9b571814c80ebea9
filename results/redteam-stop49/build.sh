#!/bin/bash
# flatten the ladder kernels into single files: build.sh OUT GEN SANDBAG SLOW [extra defines...]
cd "$(dirname "$0")"
out=$1; g=$2; sb=$3; sl=$4; shift 4
{ echo "#define KG_GEN $g"; echo "#define KG_SANDBAG_PCT $sb"; echo "#define KG_SLOW_PCT $sl"; for d in "$@"; do echo "#define $d"; done
  sed -e '/#include "collude_common.h"/{r collude_common.h' -e 'd}' ${SRC:-ladder_src.c}; } > "$out"
