#include <stdio.h>
#include <time.h>
int main(){ for(int r=0;r<5;r++){ struct timespec a,b; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&a); volatile double x=1.0; for(long i=0;i<100000000;i++) x=x*1.0000001+1e-9; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&b); printf("%.1f ", (b.tv_sec-a.tv_sec)*1e3+(b.tv_nsec-a.tv_nsec)/1e6);} printf("\n"); }
