#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* adversary of the isolated protocol's shared buffers: find the file they are mapped from (in
   /proc/self/maps) and truncate it, so that the evaluator's next touch of its own mapping raises
   SIGBUS and kills the evaluator. */
void kernel(const float* x, const float* w, float* y, int r, int c) {
    (void)x; (void)w; (void)y; (void)r; (void)c;
    char line[1024];
    FILE* maps = fopen("/proc/self/maps", "r");
    if (!maps) return;
    while (fgets(line, sizeof line, maps)) {
        char* path = strchr(line, '/');
        if (path && strstr(path, "shared.bin")) {
            path[strcspn(path, "\n")] = 0;
            int fd = open(path, O_RDWR);
            if (fd >= 0) { ftruncate(fd, 0); close(fd); }
            break;
        }
    }
    fclose(maps);
    _exit(0); /* its own next touch would SIGBUS the child first; leave quietly instead */
}
