#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <sched.h>
#include <stdlib.h>
static long ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
int main(int argc,char**argv){cpu_set_t s;CPU_ZERO(&s);CPU_SET(0,&s);sched_setaffinity(0,sizeof s,&s);
 int n=atoi(argv[1]); double tot=0; volatile double x=1; long v[4000];
 for(int k=0;k<n;k++){long a=ns(CLOCK_THREAD_CPUTIME_ID); for(long i=0;i<2000000;i++) x=x*1.0000001+1e-9; v[k]=ns(CLOCK_THREAD_CPUTIME_ID)-a; tot+=v[k];}
 long sorted[4000]; for(int i=0;i<n;i++)sorted[i]=v[i];
 for(int i=0;i<n;i++)for(int j=i+1;j<n;j++)if(sorted[j]<sorted[i]){long t=sorted[i];sorted[i]=sorted[j];sorted[j]=t;}
 printf("victim mean %.0f us median %ld us p90 %ld us\n",tot/n/1000,sorted[n/2]/1000,sorted[n*9/10]/1000);}
