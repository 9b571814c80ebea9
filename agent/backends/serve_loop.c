/* The isolated protocol's child, in C: the whole process a kernel is timed in (agent/backends/isolated.py
   `KernelServer` starts it in the sandbox; `serve_loop_binary` there builds it). No interpreter runs
   in it: there is none for the kernel to reach through libc and read the evaluator's state in, and nothing of
   the evaluator's reads a clock once the kernel is loaded. A kernel that never returns and serves
   the FIFOs itself must find no loop here slower than its own: in Python, the loop ran cache-cold
   after a large kernel and such a kernel saved 71-114 us a call (results/redteam-stop26).

   main maps the inputs the evaluator writes (read-only) and the outputs it reads, says ready ('r'),
   serves the stand-ins (kg_serve, expecting 'n'), and on 'b' forgets every reading of a clock in
   its memory (`kg_forget_the_time`), installs the kernel filter, loads the kernel, takes the clocks
   away (`kg_hide_clocks`: docs/sandbox.md, "A timed kernel has no clock"),
   says ready again and serves its calls (kg_serve, expecting 'c'); any other byte ends the process.

   kg_serve reads one command byte at a time from `go`:
   - `expect` 'n' (before the kernel is loaded): each 'n' runs the serial stand-in (read `nbytes` of
     the shared buffers into `copy`, stay on the CPU until `spin_ns` have passed), each 'p' the
     parallel one (the same work split over `threads` threads, all on the CPU until the answer, as a
     parallel kernel is); either answers 'd', the CPU time all its threads spent and the wall time
     it took (8 bytes each, little-endian) and whether the time-stamp counter was off (1 byte), in
     the same write; 's' starts `threads` - 1 threads that sleep until 'e' ends them (`kg_sleepers`),
     and either answers 'r';
   - `expect` 'c': each 'c' calls `fn` with `args` and answers 'd'.
   Any other byte ends the loop and is returned (the next command); -1 when `go` is closed. The
   stand-ins read the monotonic clock (by system call: the time-stamp counter is off from before they
   run, `kg_counter_off`): once they are over, the stack is wiped where their frames were (a timed
   kernel has no clock, and it can read the stack). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/futex.h>
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "kernel_call.h"

/* A clock read by system call: with the time-stamp counter off (`kg_counter_off`) the vDSO's
   clock_gettime, which reads it, faults. The reading is not left on the stack. */
static int64_t kg_clock(clockid_t id) {
    struct timespec t;
    int64_t ns = syscall(SYS_clock_gettime, id, &t) == 0 ? (int64_t)t.tv_sec * 1000000000 + t.tv_nsec : 0;
    explicit_bzero(&t, sizeof t);
    return ns;
}

/* The counter as it was turned off (0: it is on). No reading this process takes can be later. */
static uint64_t kg_counter_at_off;

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

/* Threads asleep between calls, as an OpenMP kernel's workers are (libgomp's passive wait: a futex
   wait on a word). Every thread of a kernel pays the hand-over on every call: the stop after the
   answer (SIGSTOP) wakes a sleeping one to join the group stop, SIGCONT wakes it again to restart
   its wait (10-35 us of CPU time a call for one idle worker on stop 66's 2-core VM). 's' starts
   `threads` - 1 of them, so that the stand-ins measure that cost too (`call_overhead`); 'e' ends
   them, and so does loading the kernel. */
static uint32_t kg_sleepers_end;
static pthread_t kg_sleeper_threads[KG_MAX_THREADS];
static long kg_sleeper_count;

static void *kg_sleeper(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&kg_sleepers_end, __ATOMIC_ACQUIRE))
        syscall(SYS_futex, &kg_sleepers_end, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static void kg_sleepers(int start, long threads) {
    __atomic_store_n(&kg_sleepers_end, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &kg_sleepers_end, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    for (long t = 0; t < kg_sleeper_count; t++) pthread_join(kg_sleeper_threads[t], NULL);
    kg_sleeper_count = 0;
    if (!start) return;
    kg_sleepers_end = 0;
    long wanted = threads - 1 > KG_MAX_THREADS ? KG_MAX_THREADS : threads - 1;
    while (kg_sleeper_count < wanted &&
           pthread_create(&kg_sleeper_threads[kg_sleeper_count], NULL, kg_sleeper, NULL) == 0)
        kg_sleeper_count++;
}

static __attribute__((noinline)) int kg_serve(int go, int done, void *fn, const long *args, char expect,
                                             const void *src, long nbytes,
             void *copy, long spin_ns, long threads) {
    kg_kernel kernel = (kg_kernel)fn;
    char command;
    for (;;) {
        if (read(go, &command, 1) != 1) return -1;
        if (expect == 'n' && (command == 'n' || command == 'p')) {
            int64_t cpu, wall;
            kg_stand_ins(src, nbytes, copy, spin_ns, command == 'p' ? threads : 1, &cpu, &wall);
            char answer[18];
            answer[0] = 'd';
            memcpy(answer + 1, &cpu, 8);
            memcpy(answer + 9, &wall, 8);
            answer[17] = kg_counter_at_off != 0;
            if (write(done, answer, 18) != 18) return -1;
        } else if (expect == 'n' && (command == 's' || command == 'e')) {
            kg_sleepers(command == 's', threads);
            if (write(done, "r", 1) != 1) return -1;
        } else if (command != expect) {
            return (unsigned char)command;
        } else {
            kg_call_kernel(kernel, args); /* its stack at the declared place (kernel_call.h) */
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

/* What /proc/self/maps says of one mapping. */
struct kg_mapping {
    unsigned long start, end;
    char perms[5];
    int clock; /* [vdso], [vvar], [vvar_vclock] */
};

#define KG_MAX_MAPPINGS 1024

/* The mappings as last read (`kg_read_mappings`): before the kernel is loaded, to scan them, and after,
   for the vDSO's; zeroed after each use. */
static struct kg_mapping kg_mappings[KG_MAX_MAPPINGS];

/* The mappings of this process, read once: `maps` is a buffer for the text, zeroed after (the inode
   numbers of its files are a counter of files made). Returns the count. */
static int kg_read_mappings(struct kg_mapping *out) {
    static char maps[1 << 17];
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0) kg_fail("cannot read /proc/self/maps", NULL);
    size_t used = 0;
    ssize_t got;
    while (used < sizeof maps - 1 && (got = read(fd, maps + used, sizeof maps - 1 - used)) > 0) used += (size_t)got;
    close(fd);
    if (used == sizeof maps - 1) kg_fail("/proc/self/maps is too long to read", NULL);
    maps[used] = 0;
    int count = 0;
    for (char *line = maps; *line;) {
        char *next = strchr(line, '\n');
        if (next) *next = 0;
        if (count == KG_MAX_MAPPINGS) kg_fail("too many mappings", NULL);
        struct kg_mapping *m = &out[count++];
        if (sscanf(line, "%lx-%lx %4s", &m->start, &m->end, m->perms) != 3) kg_fail("a line of /proc/self/maps", line);
        m->clock = strstr(line, "[vdso]") || strstr(line, "[vvar]") || strstr(line, "[vvar_vclock]");
        line = next ? next + 1 : line + strlen(line);
    }
    explicit_bzero(maps, sizeof maps);
    return count;
}

/* The time-stamp counter off for this thread and every thread it starts (rdtsc and rdtscp fault),
   before the stand-ins run: each switch into or out of a thread with it off costs the CPU a write
   of CR4, which a guest of KVM may pay as an exit to the host (15-17 us more per call of an empty
   kernel on the AMD host of stop 65, results/stop65/tsc_probe.out). The stand-ins that calibrate
   a call's overhead (`call_overhead` in isolated.py) must pay what the kernel's calls pay. */
static void kg_counter_off(void) {
    kg_counter_at_off = __builtin_ia32_rdtsc();
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) kg_fail("cannot turn the time-stamp counter off", NULL);
}

struct kg_now {
    uint64_t counter; /* the time-stamp counter */
    uint64_t ns[3];   /* CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME */
    uint64_t date_s;  /* CLOCK_REALTIME in seconds (time(), a timeval's or timespec's tv_sec) */
};

static void kg_read_clocks(struct kg_now *now) {
    static const clockid_t ids[3] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME};
    now->counter = kg_counter_at_off ? kg_counter_at_off : __builtin_ia32_rdtsc();
    for (int c = 0; c < 3; c++) now->ns[c] = (uint64_t)kg_clock(ids[c]);
    now->date_s = now->ns[0] / 1000000000;
}

/* The clocks as main began (`kg_forget_the_time` zeroes this too: it is a reading). */
static struct kg_now kg_born;

/* How long before main a reading of this process's may have been taken: the loader's work, which
   reads the counter first (1 s of a 5 GHz counter; milliseconds on a quiet host). */
#define KG_BEFORE_MAIN_NS 1000000000ull
#define KG_BEFORE_MAIN_COUNTER 5000000000ull

/* The span of each clock over this process's life: a word in one is taken for a reading. */
struct kg_life {
    struct kg_now from, to;
};

static int kg_within(uint64_t word, uint64_t from, uint64_t to) { return word >= from && word <= to; }

static int kg_is_a_reading(uint64_t word, const struct kg_life *life) {
    if (kg_within(word, life->from.counter, life->to.counter)) return 1;
    for (int c = 0; c < 3; c++)
        if (kg_within(word, life->from.ns[c], life->to.ns[c])) return 1;
    return kg_within(word, life->from.date_s, life->to.date_s);
}

struct kg_range {
    uintptr_t start, end;
};

#define KG_MAX_RELRO 64

struct kg_relro {
    struct kg_range range[KG_MAX_RELRO];
    int count;
};

static int kg_add_relro(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    struct kg_relro *relro = found;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            if (relro->count == KG_MAX_RELRO) kg_fail("too many loaded objects to scan", NULL);
            uintptr_t start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            relro->range[relro->count++] = (struct kg_range){start, start + info->dlpi_phdr[i].p_memsz};
        }
    return 0;
}

/* The mapping `address` is in, or NULL. */
static const struct kg_mapping *kg_mapping_of(uint64_t address, const struct kg_mapping *m, int count) {
    for (int i = 0; i < count; i++)
        if (address >= m[i].start && address < m[i].end) return &m[i];
    return NULL;
}

/* Zero the words of [start, end) that are readings of `life` and no mapped address (a pointer; a
   reading that happens to be one is not told apart), making a read-only page writable for it. */
static void kg_zero_readings(uintptr_t start, uintptr_t end, const struct kg_life *life, const struct kg_mapping *m,
                             int count) {
    for (volatile uint64_t *word = (volatile uint64_t *)((start + 7) & ~(uintptr_t)7); (uintptr_t)(word + 1) <= end; word++) {
        if ((const void *)word >= (const void *)life && (const void *)word < (const void *)(life + 1))
            continue; /* the spans this scan compares with, zeroed after it */
        uint64_t value = *word;
        if (!kg_is_a_reading(value, life) || kg_mapping_of(value, m, count)) continue;
        const struct kg_mapping *in = kg_mapping_of((uintptr_t)word, m, count);
        int writable = in && in->perms[1] == 'w';
        void *page = (void *)((uintptr_t)word & ~(uintptr_t)4095);
        if (!writable && mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0)
            kg_fail("cannot write a read-only page to forget a reading of a clock", NULL);
        *word = 0;
        if (!writable && mprotect(page, 4096, PROT_READ) != 0) kg_fail("cannot make a page read-only again", NULL);
    }
}

/* Zero every word that holds a reading of a clock taken in this process's life (the date, or the
   time since boot, from which the date follows) wherever the process writes: its writable private
   memory (data, heap, stacks; shared mappings are the evaluator's buffers) and what each loaded
   object made read-only after relocation (glibc's loader keeps its reading of the counter as the
   process started there, `start_time`). Other read-only pages are the files' contents as they
   were built. Readings in whole seconds of the boot clocks are not looked for (small integers, as a
   count or a size is); the stack is wiped where the stand-ins ran as well. */
static void kg_forget_the_time(void) {
    const struct kg_mapping *m = kg_mappings;
    int count = kg_read_mappings(kg_mappings);
    struct kg_life life = {kg_born, {0}};
    kg_read_clocks(&life.to);
    life.from.counter -= KG_BEFORE_MAIN_COUNTER;
    for (int c = 0; c < 3; c++) life.from.ns[c] -= KG_BEFORE_MAIN_NS;
    life.from.date_s -= KG_BEFORE_MAIN_NS / 1000000000 + 1;
    static struct kg_relro relro;
    dl_iterate_phdr(kg_add_relro, &relro);
    for (int i = 0; i < count; i++)
        if (m[i].perms[0] == 'r' && m[i].perms[1] == 'w' && m[i].perms[3] == 'p' && !m[i].clock)
            kg_zero_readings(m[i].start, m[i].end, &life, m, count);
    for (int i = 0; i < relro.count; i++) kg_zero_readings(relro.range[i].start, relro.range[i].end, &life, m, count);
    explicit_bzero(&life, sizeof life);
    explicit_bzero(kg_mappings, sizeof kg_mappings);
}

/* The vDSO's code and clock pages unmapped (glibc keeps their addresses, so its clock calls fault;
   some read the clock pages without the counter: time(), the coarse clocks); the counter has been off
   since before the stand-ins (`kg_counter_off`). After the kernel is loaded: the loader's symbol
   lookups read the vDSO's tables. The system calls that read a clock are the clock filter's
   (agent/backends/seccomp.py CLOCK_FILTER). */
static void kg_hide_clocks(void) {
    int count = kg_read_mappings(kg_mappings);
    for (int i = 0; i < count; i++)
        if (kg_mappings[i].clock && munmap((void *)kg_mappings[i].start, kg_mappings[i].end - kg_mappings[i].start) != 0)
            kg_fail("cannot unmap the vDSO", NULL);
    explicit_bzero(kg_mappings, sizeof kg_mappings);
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
    kg_read_clocks(&kg_born);
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
    if (hide_clocks) kg_counter_off();
    int forget_after_load = (int)kg_long(argc, argv, "forget_after_load");
    const char *kernel = kg_arg(argc, argv, "kernel"), *kernel_filter = kg_arg(argc, argv, "kernel_filter");
    const char *clock_filter = kg_arg(argc, argv, "clock_filter");
    long nbytes = kg_long(argc, argv, "stand_in_bytes");
    char *copy = malloc(nbytes > 0 ? (size_t)nbytes : 1);
    if (!copy) kg_fail("no memory for the stand-in", NULL);
    if (write(done, "r", 1) != 1) _exit(0);
    if (kg_serve(go, done, NULL, args, 'n', inputs, nbytes, copy, kg_long(argc, argv, "stand_in_ns"),
                 kg_long(argc, argv, "stand_in_threads")) != 'b')
        _exit(0); /* 'q', or the evaluator went away */
    kg_sleepers(0, 0); /* the kernel starts with this thread alone */
    if (hide_clocks) kg_wipe_below(1 << 16); /* the stand-ins' frames, with their readings of the clock */
    free(copy);
    /* Before the kernel is loaded: its own data is the model's, and a grid of dates in it, some
       zeroed, would tell it the date (the fifteenth adversary, results/redteam-stop54). Loading reads
       no clock. `forget_after_load` is for a test to show that. */
    if (hide_clocks && !forget_after_load) kg_forget_the_time();
    kg_install_filter(kernel_filter, 1);
    /* Admission refuses load-time code (constructors, indirect functions): none of the kernel's runs here. */
    void *object = dlopen(kernel, RTLD_NOW | RTLD_LOCAL);
    void *fn = object ? dlsym(object, "kernel") : NULL;
    if (!fn) kg_fail("cannot load the kernel", dlerror());
    if (hide_clocks && forget_after_load) kg_forget_the_time();
    if (hide_clocks) kg_hide_clocks();
    kg_install_filter(clock_filter, 0);
    if (hide_clocks) kg_wipe_below(1 << 16); /* the loader's frames: the files' times it read (fstat) */
    if (write(done, "r", 1) != 1) _exit(0);
    kg_serve(go, done, fn, args, 'c', NULL, 0, NULL, 0, 0);
    _exit(0); /* 'q', or the evaluator went away: nothing to flush */
}
