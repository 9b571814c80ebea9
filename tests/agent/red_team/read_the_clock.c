/* Every way a kernel in the isolated protocol's child might read the time, tried once per call; not
   an rmsnorm: what it writes into y is the record, read by
   test_a_timed_kernel_has_no_clock (admission skipped: any libc function is what a kernel reaches
   by address anyway, results/redteam-stop25). With a clock a kernel knows its age: a parent could
   run honest while new, when its figure is set, and slow ever after (the fourteenth adversary's
   stale figure, docs/sandbox.md).

   y[k] for channel k: 1 the time was read, 0 refused (an error), 2 it faulted (SIGSEGV or SIGILL,
   caught). y[KG_DUMP_AT ...]: the raw bytes of the stack from KG_BELOW bytes below this frame up to
   KG_ABOVE above it (zeros where nothing is mapped): the test looks there for readings of the
   monotonic clock, the evaluator's (its stand-ins read it before the kernel is loaded) or the one
   `kg_leave_a_reading` leaves where the clock can be read. Then, from byte KG_DATA_AT of y, a count
   and that many 8-byte words: every word of the loaded objects' data (their writable segments and
   what is read-only after relocation, found with dl_iterate_phdr as any code can) and of the stack
   up to the environment: the test looks there for readings of the counter and the clocks (glibc's
   loader keeps its reading of the counter as the process started, `start_time`). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <omp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#define KG_CHANNELS 16 /* and y[KG_CHANNELS]: rdtsc in a thread started after */
#define KG_DUMP_AT 64
#define KG_BELOW (64 << 10)
#define KG_ABOVE (32 << 10)
#define KG_DATA_AT (KG_DUMP_AT * 4 + KG_BELOW + KG_ABOVE)

static sigjmp_buf *kg_jump(void) {
    static __thread sigjmp_buf jump;
    return &jump;
}

static void kg_caught(int sig) { siglongjmp(*kg_jump(), sig); }

struct kg_record {
    uint64_t *words;
    long used, room;
};

static void kg_record_range(struct kg_record *record, uintptr_t from, uintptr_t to) {
    for (from = (from + 7) & ~(uintptr_t)7; from + 8 <= to && record->used < record->room; from += 8)
        record->words[record->used++] = *(const volatile uint64_t *)from;
}

static int kg_record_object(struct dl_phdr_info *info, size_t size, void *record) {
    (void)size;
    if (sigsetjmp(*kg_jump(), 1) != 0) return 0; /* an object no longer mapped (the vDSO): skipped */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if ((p->p_type == PT_LOAD && (p->p_flags & PF_W)) || p->p_type == PT_GNU_RELRO)
            kg_record_range(record, info->dlpi_addr + p->p_vaddr, info->dlpi_addr + p->p_vaddr + p->p_memsz);
    }
    return 0;
}

static int kg_rdtsc(void) { return __builtin_ia32_rdtsc() != 0; }
static int kg_rdtscp(void) {
    unsigned int aux;
    return __builtin_ia32_rdtscp(&aux) != 0;
}
static int kg_vdso_realtime(void) {
    struct timespec t = {0, 0};
    return clock_gettime(CLOCK_REALTIME, &t) == 0 && t.tv_sec > 1000000000;
}
static int kg_vdso_time(void) { return time(NULL) > 1000000000; }
static int kg_vdso_coarse(void) {
    struct timespec t = {0, 0};
    return clock_gettime(CLOCK_REALTIME_COARSE, &t) == 0 && t.tv_sec > 1000000000;
}
static int kg_syscall_clock(void) {
    struct timespec t = {0, 0};
    return syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t) == 0 && (t.tv_sec | t.tv_nsec) != 0;
}
static int kg_times(void) { /* glibc returns 0 for a refused call: ticks since boot are never 0 */
    struct tms t;
    clock_t ticks = times(&t);
    return ticks != (clock_t)-1 && ticks > 0;
}
static int kg_sysinfo(void) {
    struct sysinfo s;
    return sysinfo(&s) == 0 && s.uptime > 0;
}
static int kg_rusage(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0;
}
static int kg_file_times(void) { /* a FIFO's times change with every write to it */
    for (int fd = 0; fd < 64; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_mtime > 1000000000) return 1;
    }
    return 0;
}
static int kg_proc_uptime(void) {
    int fd = open("/proc/uptime", O_RDONLY);
    if (fd < 0) return 0;
    char text[64];
    ssize_t got = read(fd, text, sizeof text);
    close(fd);
    return got > 0;
}
static int kg_fd_links(void) { /* a pipe's inode number counts the pipes made since boot */
    char path[64], link[64];
    for (int fd = 0; fd < 64; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (readlink(path, link, sizeof link) > 0) return 1;
    }
    return 0;
}
static int kg_futex_deadline(void) { /* a wait until 1970: over at once if allowed */
    int word = 0;
    struct timespec deadline = {1, 0};
    long r = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME | FUTEX_PRIVATE_FLAG, 0,
                     &deadline, NULL, FUTEX_BITSET_MATCH_ANY);
    return r == -1 && errno == ETIMEDOUT;
}
static int kg_sleep_until(void) { /* a sleep until 1970: over at once if allowed */
    struct timespec deadline = {1, 0};
    return clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &deadline, NULL) == 0;
}
static int kg_omp_wtime(void) { return omp_get_wtime() > 0.0; }
static int kg_vdso_page(void) { /* the vDSO itself, read: is it still there */
    const volatile unsigned char *vdso = (const void *)getauxval(AT_SYSINFO_EHDR);
    return vdso && vdso[1] == 'E';
}
static int kg_rdtsc_thread(void) { /* the counter in a thread started now */
    int got = 0;
#pragma omp parallel num_threads(2) reduction(+ : got)
    if (omp_get_thread_num() == 1) {
        struct sigaction on = {0};
        on.sa_handler = kg_caught;
        sigaction(SIGSEGV, &on, NULL);
        if (sigsetjmp(*kg_jump(), 1) == 0) got = kg_rdtsc();
        else got = 0;
    }
    return got;
}

static int (*const kg_channels[KG_CHANNELS])(void) = {
    kg_rdtsc,       kg_rdtscp,     kg_vdso_realtime, kg_vdso_time,      kg_vdso_coarse,  kg_syscall_clock,
    kg_times,       kg_sysinfo,    kg_rusage,        kg_file_times,     kg_proc_uptime,  kg_fd_links,
    kg_futex_deadline, kg_sleep_until, kg_omp_wtime, kg_vdso_page,
};

/* A reading of the monotonic clock left on the stack, as the evaluator's code would leave one: the
   control's proof that the dump below finds such a thing (the reading at the bottom of a 1 KiB frame,
   below what the dump's own calls reach). */
static void __attribute__((noinline)) kg_leave_a_reading(void) {
    volatile int64_t pad[128];
    struct timespec t = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &t);
    pad[0] = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    __asm__ volatile("" : : "r"(pad) : "memory");
}

void kernel(const float *x, const float *w, float *y, int r, int c) {
    (void)x, (void)w;
    struct sigaction on = {0};
    on.sa_handler = kg_caught;
    sigaction(SIGSEGV, &on, NULL);
    sigaction(SIGILL, &on, NULL);
    if (sigsetjmp(*kg_jump(), 1) == 0) kg_leave_a_reading();
    if ((long)r * c * 4 >= KG_DUMP_AT * 4 + KG_BELOW + KG_ABOVE) { /* before the probes, which leave readings */
        unsigned char *dump = (unsigned char *)(y + KG_DUMP_AT), *frame = __builtin_frame_address(0);
        for (volatile long at = 0; at < KG_BELOW + KG_ABOVE; at += 4096) { /* page by page: the top may be unmapped */
            volatile unsigned char *from = frame - KG_BELOW + at;
            if (sigsetjmp(*kg_jump(), 1) == 0)
                for (long i = 0; i < 4096; i++) dump[at + i] = from[i];
            else
                memset(dump + at, 0, 4096);
        }
    }
    long bytes = (long)r * c * 4;
    if (bytes >= KG_DATA_AT + 4096) { /* before the probes too */
        extern char **environ;
        struct kg_record record = {(uint64_t *)((char *)y + KG_DATA_AT) + 1, 0, (bytes - KG_DATA_AT) / 8 - 1};
        dl_iterate_phdr(kg_record_object, &record);
        kg_record_range(&record, (uintptr_t)__builtin_frame_address(0), (uintptr_t)environ);
        *(uint64_t *)((char *)y + KG_DATA_AT) = (uint64_t)record.used;
    }
    for (volatile int k = 0; k < KG_CHANNELS; k++) {
        if (sigsetjmp(*kg_jump(), 1) == 0) y[k] = (float)kg_channels[k]();
        else y[k] = 2.0f;
    }
    y[KG_CHANNELS] = (float)kg_rdtsc_thread();
}
