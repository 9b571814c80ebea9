"""The probe-only wrapper of stop 67's inner-clock probes: the counter read around the real kernel."""

import os

SIGNATURES = {
    "layernorm": ("const float* restrict x, const float* restrict gamma, const float* restrict beta, "
                  "float* restrict y, int r, int c", "x, gamma, beta, y, r, c"),
}
WRAP = """
#undef kernel
#include <unistd.h>
#include <x86intrin.h>
void kernel({params}) {{
    unsigned long long t0 = __rdtsc();
    kernel_inner({args});
    unsigned long long t1 = __rdtsc();
    char line[32]; int n = 0; unsigned long long d = t1 - t0; char digits[24]; int k = 0;
    do {{ digits[k++] = '0' + d % 10; d /= 10; }} while (d);
    line[n++] = 'K'; line[n++] = 'G'; line[n++] = 'T'; line[n++] = ' ';
    while (k) line[n++] = digits[--k];
    line[n++] = '\\n';
    (void)!write(2, line, n);
    TAIL
}}
"""
# TAIL=spin (environment): after its write, the kernel runs about 0.2 ms of register-only arithmetic,
# so its call ends as the serial stand-in's does (no memory traffic), not as a streaming kernel's.
TAILS = {
    "": "",
    "spin": "{{ double v = 1.0; for (long i = 0; i < 120000; i++) v = v * 1.0000001 + 1e-9; "
            "__asm__ volatile(\"\" : : \"x\"(v)); }}",
}



def wrapped_source(cell: str):  # type: ignore[no-untyped-def]
    """(task, source) of `cell` ("task:config") with its kernel wrapped (TAIL from the environment)."""
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.bench.configs import checked_configs

    name, label = cell.split(":")
    task = get_task(name)
    params, args = SIGNATURES[name]
    body = task.source("c", checked_configs(task)[label])
    wrap = WRAP.replace("TAIL", TAILS[os.environ.get("TAIL", "")]).format(params=params, args=args)
    return task, "#define kernel kernel_inner\n" + body + wrap
