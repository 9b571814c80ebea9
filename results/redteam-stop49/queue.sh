#!/bin/bash
cd "$(dirname "$0")"
./loops.sh d7 1; ./loops.sh d7 0; ./loops.sh d7 1; ./loops.sh d7 0; ./loops.sh d7 1; ./loops.sh d0 1
