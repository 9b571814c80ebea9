/* attack: the source includes itself twice per level, up to gcc's include depth limit (200): 2^200
   inclusions. Without limits the compiler burns a core and gigabytes of memory for minutes. */
#include __FILE__
#include __FILE__
void kernel(const float* x, const float* w, float* y, int r, int c) { (void)x; (void)w; (void)y; (void)r; (void)c; }
