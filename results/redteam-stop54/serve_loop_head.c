/* The isolated protocol's child, in C: the whole process a kernel is timed in (agent/backends/isolated.py
   `KernelServer` starts it in the sandbox; `serve_loop` builds it). No interpreter runs in it: there
   is none for the kernel to reach through libc and read the evaluator's state in, and nothing of
   the evaluator's reads a clock once the kernel is loaded. A kernel that never returns and serves
   the FIFOs itself must find no loop here slower than its own: in Python, the loop ran cache-cold
   after a large kernel and such a kernel saved 71-114 us a call (results/redteam-stop26).

   main maps the inputs the evaluator writes (read-only) and the outputs it reads, says ready ('r'),
   serves the stand-ins (kg_serve, expecting 'n'), and on 'b' installs the kernel filter, loads the
   kernel, takes the clocks away (`kg_hide_clocks`: docs/sandbox.md, "A timed kernel has no clock"),
   says ready again and serves its calls (kg_serve, expecting 'c'); any other byte ends the process.

   kg_serve reads one command byte at a time from `go`:
   - `expect` 'n' (before the kernel is loaded): each 'n' runs the serial stand-in (read `nbytes` of
     the shared buffers into `copy`, stay on the CPU until `spin_ns` have passed), each 'p' the
     parallel one (the same work split over `threads` threads, all on the CPU until the answer, as a
     parallel kernel is); either answers 'd', the CPU time all its threads spent and the wall time
     it took (8 bytes each, little-endian, in the same write);
   - `expect` 'c': each 'c' calls `fn` with `args` and answers 'd'.
   Any other byte ends the loop and is returned (the next command); -1 when `go` is closed. The
   stand-ins read the monotonic clock: once they are over, the stack is wiped where their frames were
   (a timed kernel has no clock, and it can read the stack). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KG_MAX_ARGS 16

typedef void (*kg_kernel)(long, long, long, long, long, long, long, long, long, long, long, long, long,
                          long, long, long);

static int64_t kg_clock(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#define KG_MAX_THREADS 64

struct kg_share {
    const char *src;
    char *copy;
    long nbytes;
    int64_t end; /* CLOCK_MONOTONIC */
    int64_t cpu; /* out: the CPU time this thread spent */
};

/* Each thread reads its own CPU clock: the process's is sampled at scheduler ticks while a CPU-time
   limit is set (RLIMIT_CPU arms its timer), so it lags for threads that are running. */
static void *kg_stand_in(void *arg) {
    struct kg_share *share = arg;
    int64_t cpu = kg_clock(CLOCK_THREAD_CPUTIME_ID);
    memmove(share->copy, share->src, (size_t)share->nbytes);
    while (kg_clock(CLOCK_MONOTONIC) < share->end) {
    }
    share->cpu = kg_clock(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return NULL;
}

/* Zero `bytes` of the stack below the caller's frame: where the frames of what it called before were. */
static void __attribute__((noinline)) kg_wipe_below(size_t bytes) {
    unsigned char below[bytes];
    explicit_bzero(below, bytes);
}

/* A helper's stack goes back to glibc's cache, where an OpenMP thread of the kernel may get it: wiped
   where the stand-in's clock readings were first (4 KiB, a few tens of nanoseconds). */
static void *kg_helper(void *arg) {
    kg_stand_in(arg);
    kg_wipe_below(1 << 12);
    return NULL;
}

/* The stand-in on `threads` threads: each its slice of the copy, all until `spin_ns` have passed. */
static void kg_stand_ins(const char *src, long nbytes, char *copy, long spin_ns, long threads, int64_t *cpu,
                         int64_t *wall) {
    pthread_t helper[KG_MAX_THREADS];
    struct kg_share share[KG_MAX_THREADS];
    int64_t start = kg_clock(CLOCK_MONOTONIC);
    long n = threads < 1 ? 1 : threads > KG_MAX_THREADS ? KG_MAX_THREADS : threads, slice = nbytes / n, started = 0;
    for (long t = 0; t < n; t++) {
        long from = t * slice, len = t == n - 1 ? nbytes - from : slice;
        share[t] = (struct kg_share){src + from, copy + from, len, start + spin_ns, 0};
    }
    for (long t = 1; t < n; t++) {
        if (pthread_create(&helper[t], NULL, kg_helper, &share[t]) != 0) break;
        started = t;
    }
    kg_stand_in(&share[0]);
    for (long t = 1; t <= started; t++) pthread_join(helper[t], NULL);
    for (long t = started + 1; t < n; t++) kg_stand_in(&share[t]); /* a thread that could not start */
    *wall = kg_clock(CLOCK_MONOTONIC) - start;
    *cpu = 0;
    for (long t = 0; t < n; t++) *cpu += share[t].cpu;
}

static __attribute__((noinline)) int kg_serve(int go, int done, void *fn, const long *args, char expect,
                                             const void *src, long nbytes,
             void *copy, long spin_ns, long threads) {
    /* Every argument of a kernel is a pointer or an int: in the x86-64 and AArch64 calling
       conventions each takes one integer register or stack slot, so passing all as long works for
       any count up to KG_MAX_ARGS (the callee reads the ones it declares). */
    kg_kernel kernel = (kg_kernel)fn;
    char command;
    for (;;) {
        if (read(go, &command, 1) != 1) return -1;
        if (expect == 'n' && (command == 'n' || command == 'p')) {
            int64_t cpu, wall;
            kg_stand_ins(src, nbytes, copy, spin_ns, command == 'p' ? threads : 1, &cpu, &wall);
            char answer[17];
            answer[0] = 'd';
            memcpy(answer + 1, &cpu, 8);
            memcpy(answer + 9, &wall, 8);
            if (write(done, answer, 17) != 17) return -1;
        } else if (command != expect) {
            return (unsigned char)command;
        } else {
            kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                   args[10], args[11], args[12], args[13], args[14], args[15]);
            if (write(done, "d", 1) != 1) return -1;
        }
    }
}

/* End the process with `why` in its log (its stderr, which the evaluator shows when the child dies). */
static void kg_fail(const char *why, const char *what) {
    dprintf(2, "serve loop: %s%s%s\n", why, what ? ": " : "", what ? what : "");
    _exit(70);
}

/* The value of `key=` among the arguments; fails without it. */
static const char *kg_arg(int argc, char **argv, const char *key) {
    size_t n = strlen(key);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
    kg_fail("missing argument", key);
    return NULL;
}

static long kg_long(int argc, char **argv, const char *key) {
    char *end;
    const char *text = kg_arg(argc, argv, key);
    long value = strtol(text, &end, 10);
    if (*text == 0 || *end != 0) kg_fail("not a number", key);
    return value;
}

/* Comma-separated numbers of `key` appended to `out` from `at`; the new count. */
static int kg_longs(int argc, char **argv, const char *key, long *out, int at, int most) {
    const char *text = kg_arg(argc, argv, key);
    while (*text) {
        char *end;
        if (at >= most) kg_fail("too many kernel arguments", key);
        out[at++] = strtol(text, &end, 10);
        if (end == text || (*end != ',' && *end != 0)) kg_fail("not a list of numbers", key);
        text = *end ? end + 1 : end;
    }
    return at;
}

/* A seccomp program from its hex text (empty: none); installs it on this thread and those it starts. */
static void kg_install_filter(const char *hex, int first) {
    size_t n = strlen(hex) / 2;
    if (n == 0) return;
    if (n % sizeof(struct sock_filter) != 0) kg_fail("a filter of a partial instruction", hex);
    unsigned char *bytes = malloc(n);
    if (!bytes) kg_fail("no memory for the filter", NULL);
    for (size_t i = 0; i < n; i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1) kg_fail("a filter not in hex", NULL);
        bytes[i] = (unsigned char)byte;
    }
    struct sock_fprog program = {(unsigned short)(n / sizeof(struct sock_filter)), (struct sock_filter *)bytes};
    if (first && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) kg_fail("cannot set no_new_privs", NULL);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) kg_fail("cannot install a filter", NULL);
    free(bytes);
}

/* The time-stamp counter off for this thread and every thread it starts (rdtsc and rdtscp fault),
   and the vDSO's code and clock pages unmapped (glibc keeps their addresses, so its clock calls
   fault too; some read the clock pages without the counter: time(), the coarse clocks). The system
   calls that read a clock are the clock filter's (agent/backends/seccomp.py CLOCK_FILTER). */
static void kg_hide_clocks(void) {
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) kg_fail("cannot turn the time-stamp counter off", NULL);
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0) kg_fail("cannot read /proc/self/maps", NULL);
    static char maps[1 << 16];
    size_t used = 0;
    ssize_t got;
    while (used < sizeof maps - 1 && (got = read(fd, maps + used, sizeof maps - 1 - used)) > 0) used += (size_t)got;
    close(fd);
    if (used == sizeof maps - 1) kg_fail("/proc/self/maps is too long to read", NULL);
    maps[used] = 0;
    unsigned long starts[8], ends[8];
    int found = 0;
    for (char *line = maps; *line && found < 8;) {
        char *next = strchr(line, '\n');
        if (next) *next = 0;
        if (strstr(line, "[vdso]") || strstr(line, "[vvar]") || strstr(line, "[vvar_vclock]")) {
            if (sscanf(line, "%lx-%lx", &starts[found], &ends[found]) != 2) kg_fail("a line of /proc/self/maps", line);
            found++;
        }
        line = next ? next + 1 : line + strlen(line);
    }
    explicit_bzero(maps, sizeof maps); /* the inode numbers of its files: a counter of files made */
    for (int i = 0; i < found; i++)
        if (munmap((void *)starts[i], ends[i] - starts[i]) != 0) kg_fail("cannot unmap the vDSO", NULL);
}

/* The address of `path` mapped shared (read-only from a read-only descriptor: the kernel's writes
   fault, and mprotect cannot make the mapping writable), the descriptor closed after. */
static __attribute__((noinline)) char *kg_map(const char *path, int writable) {
    int fd = open(path, writable ? O_RDWR : O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) kg_fail("cannot open", path);
    size_t size = st.st_size > 0 ? (size_t)st.st_size : 1;
    explicit_bzero(&st, sizeof st); /* its times */
    void *at = mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    close(fd);
    if (at == MAP_FAILED) kg_fail("cannot map", path);
    return at;
}

/* The address space this process has now plus `headroom` (RLIMIT_AS): what the buffers, the stand-in's
   copy and the kernel may take, as in the other children (agent/backends/_child.py). */
static void kg_limit_memory(long headroom) {
    int fd = open("/proc/self/statm", O_RDONLY);
    char text[128] = {0};
    if (fd < 0 || read(fd, text, sizeof text - 1) <= 0) kg_fail("cannot read /proc/self/statm", NULL);
    close(fd);
    rlim_t limit = (rlim_t)strtoul(text, NULL, 10) * (rlim_t)sysconf(_SC_PAGESIZE) + (rlim_t)headroom;
    struct rlimit r = {limit, limit};
    if (setrlimit(RLIMIT_AS, &r) != 0) kg_fail("cannot limit the address space", NULL);
}

int main(int argc, char **argv) {
    kg_limit_memory(kg_long(argc, argv, "memory_bytes")); /* first: the buffers are in the allowance */
    char *inputs = kg_map(kg_arg(argc, argv, "inputs"), !kg_long(argc, argv, "inputs_read_only"));
    char *outputs = kg_map(kg_arg(argc, argv, "outputs"), 1);
    long offsets[KG_MAX_ARGS] = {0}, args[KG_MAX_ARGS] = {0};
    int n_in = kg_longs(argc, argv, "input_offsets", offsets, 0, KG_MAX_ARGS);
    int n_out = kg_longs(argc, argv, "output_offsets", offsets, n_in, KG_MAX_ARGS);
    for (int i = 0; i < n_out; i++) args[i] = (long)(i < n_in ? inputs : outputs) + offsets[i];
    kg_longs(argc, argv, "sizes", args, n_out, KG_MAX_ARGS);
    int go = open(kg_arg(argc, argv, "go"), O_RDONLY);
    int done = open(kg_arg(argc, argv, "done"), O_WRONLY);
    if (go < 0 || done < 0) kg_fail("cannot open the FIFOs", NULL);
    int hide_clocks = (int)kg_long(argc, argv, "hide_clocks");
    const char *kernel = kg_arg(argc, argv, "kernel"), *kernel_filter = kg_arg(argc, argv, "kernel_filter");
    const char *clock_filter = kg_arg(argc, argv, "clock_filter");
    long nbytes = kg_long(argc, argv, "stand_in_bytes");
    char *copy = malloc(nbytes > 0 ? (size_t)nbytes : 1);
    if (!copy) kg_fail("no memory for the stand-in", NULL);
    if (write(done, "r", 1) != 1) _exit(0);
    if (kg_serve(go, done, NULL, args, 'n', inputs, nbytes, copy, kg_long(argc, argv, "stand_in_ns"),
                 kg_long(argc, argv, "stand_in_threads")) != 'b')
        _exit(0); /* 'q', or the evaluator went away */
    if (hide_clocks) kg_wipe_below(1 << 16); /* the stand-ins' frames, with their readings of the clock */
    free(copy);
    kg_install_filter(kernel_filter, 1);
    /* Admission refuses load-time code (constructors, indirect functions): none of the kernel's runs here. */
    void *object = dlopen(kernel, RTLD_NOW | RTLD_LOCAL);
    void *fn = object ? dlsym(object, "kernel") : NULL;
    if (!fn) kg_fail("cannot load the kernel", dlerror());
    if (hide_clocks) kg_hide_clocks();
    kg_install_filter(clock_filter, 0);
    if (hide_clocks) kg_wipe_below(1 << 16); /* the loader's frames: the files' times it read (fstat) */
    if (write(done, "r", 1) != 1) _exit(0);
    kg_serve(go, done, fn, args, 'c', NULL, 0, NULL, 0, 0);
    _exit(0); /* 'q', or the evaluator went away: nothing to flush */
}
