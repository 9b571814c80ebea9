#!/bin/sh
# What the child's scan (agent/backends/serve_loop.c kg_forget_the_time) zeroes in a plain process
# with a kernel loaded: the scan's source with a print before each zeroing, run five times.
# usage: sh results/stop54/scan_words.sh KERNEL.so   (from the repository's root)
set -e
work=$(mktemp -d)
sed 's/\*word = 0;/{ char line[256]; int len = snprintf(line, sizeof line, "zero %p %#lx\\n", (void *)word, (unsigned long)value); write(2, line, len); } *word = 0;/' \
    agent/backends/serve_loop.c > "$work/serve_loop.c"
cat > "$work/scan.c" <<'C'
#define main serve_main
#include "serve_loop.c"
#undef main
int main(int argc, char **argv) {
    kg_read_clocks(&kg_born); /* as serve_loop.c's main does first */
    if (argc > 1 && !dlopen(argv[1], RTLD_NOW)) return 1;
    for (int i = 0; i < 5; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        kg_forget_the_time();
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("scan %d: %.3f ms\n", i, ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6);
        fflush(stdout);
    }
    return 0;
}
C
gcc -O2 -pthread -o "$work/scan" "$work/scan.c" -ldl -Wno-unused-function
"$work/scan" "$1" 2>&1
rm -rf "$work"
