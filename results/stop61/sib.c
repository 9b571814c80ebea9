/* Stop 61: does a busy loop on the other vCPU slow a compute loop on this one (are the two vCPUs
   siblings of one core on the host)? gcc -O2 -march=x86-64-v2 -pthread sib.c -o sib && ./sib.
   Output: sib.out (mode 0: the other vCPU asleep; mode 1: busy). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <stdatomic.h>
static atomic_int mode; static atomic_int stop;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void*other(void*a){pin(1);volatile double x=1;while(!stop){if(mode==1){for(int i=0;i<100000;i++)x=x*1.0000001+1e-9;}else{struct timespec t={0,1000000};nanosleep(&t,0);}}return 0;}
#define N 256
static float A[N*N],B[N*N],C[N*N];
static void mm(){for(int i=0;i<N;i++)for(int k=0;k<N;k++){float a=A[i*N+k];for(int j=0;j<N;j++)C[i*N+j]+=a*B[k*N+j];}}
int main(){pin(0);for(int i=0;i<N*N;i++){A[i]=i%7;B[i]=i%5;}pthread_t t;pthread_create(&t,0,other,0);
 for(int r=0;r<8;r++)for(int m=0;m<2;m++){mode=m;struct timespec s={0,20000000};nanosleep(&s,0);double best=1e9;double tot=0;for(int k=0;k<30;k++){double t0=now();mm();double d=now()-t0;tot+=d;if(d<best)best=d;}printf("mode %d best %.3f ms mean %.3f\n",m,best*1e3,tot/30*1e3);}
 stop=1;pthread_join(t,0);}
