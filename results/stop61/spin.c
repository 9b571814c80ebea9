/* A busy loop: run at SCHED_IDLE on a CPU it keeps from halting (idle_spin_probe.py). */
int main(void) { volatile unsigned long x = 0; for (;;) x++; }
