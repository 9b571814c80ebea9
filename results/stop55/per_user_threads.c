#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *sleeper(void *a) { (void)a; pause(); return 0; }
int main(int argc, char **argv) {
    int hold = atoi(argv[1]);
    int n = 0;
    pthread_t t;
    pthread_attr_t at; pthread_attr_init(&at); pthread_attr_setstacksize(&at, 65536);
    while (n < 2000 && pthread_create(&t, &at, sleeper, 0) == 0) { n++; if (hold && n >= hold) break; }
    printf("%s %d\n", hold ? "holding" : "could start", n); fflush(stdout);
    if (hold) sleep(3);
    return 0;
}
