#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <stdlib.h>
static long ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
int main(int argc,char**argv){cpu_set_t s;CPU_ZERO(&s);CPU_SET(0,&s);sched_setaffinity(0,sizeof s,&s);
 int N=atoi(argv[1]); double secs=atof(argv[2]); long start=ns(CLOCK_MONOTONIC); long bursts=0;
 while(ns(CLOCK_MONOTONIC)-start<secs*1e9){ for(int i=0;i<N;i++){int p[2]; if(pipe(p))break; close(p[0]); close(p[1]);} bursts++; usleep(20000);}
 printf("attacker cpu %.1f ms over %ld bursts\n", ns(CLOCK_PROCESS_CPUTIME_ID)/1e6, bursts);}
