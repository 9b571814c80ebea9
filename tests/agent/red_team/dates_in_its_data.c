/* The fifteenth adversary's clock (results/redteam-stop54, attack 1), as a probe: a grid of dates in
   the kernel's own data, one every second from a minute before the test renders it to ten minutes
   after (KG_GRID, unix seconds), in its writable data and in what the loader makes read-only after
   relocation. The timed child zeroes every word of its memory that is a reading of a clock taken in
   its life (serve_loop.c kg_forget_the_time): if that scan reached the kernel's data, the grid's
   zeroed words would be the date. Read by test_what_the_child_forgets_tells_a_kernel_nothing:
   y[0] the zeroed words of the writable grid, y[1] of the read-only one, y[2] the grid's length. */
#include <stdint.h>

static const uint64_t kg_dates[] = {KG_GRID};
#define KG_LENGTH (sizeof kg_dates / sizeof kg_dates[0])
static volatile uint64_t kg_writable[KG_LENGTH] = {KG_GRID};
__attribute__((section(".data.rel.ro"))) static volatile uint64_t kg_read_only[KG_LENGTH] = {KG_GRID};

void kernel(const float *x, const float *w, float *y, int r, int c) {
    (void)x, (void)w, (void)r, (void)c;
    int zeroed_writable = 0, zeroed_read_only = 0;
    for (unsigned i = 0; i < KG_LENGTH; i++) {
        zeroed_writable += kg_writable[i] == 0 && kg_dates[i] != 0;
        zeroed_read_only += kg_read_only[i] == 0 && kg_dates[i] != 0;
    }
    y[0] = (float)zeroed_writable;
    y[1] = (float)zeroed_read_only;
    y[2] = (float)KG_LENGTH;
}
