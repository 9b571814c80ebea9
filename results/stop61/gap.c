/* Stop 61: does the core idling before a call slow matmul best-A? A plain C harness (no sandbox,
   no evaluator): each call after 3 ms busy-waiting or 3 ms asleep, its arrays flushed first. Build
   mm.so from matmul best-A's source (gcc -O2 -fPIC -shared -fopenmp -march=x86-64-v2 mm.c -o mm.so -lm),
   then gcc -O2 gap.c -o gap -ldl && ./gap (in the directory of mm.so). Output: gap.out. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void flush(void*p,size_t n){for(size_t i=0;i<n;i+=64)_mm_clflush((char*)p+i);_mm_mfence();}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
 cpu_set_t s;CPU_ZERO(&s);CPU_SET(1,&s);sched_setaffinity(0,sizeof s,&s);
 void*h=dlopen("./mm.so",RTLD_NOW);void(*k)(const float*,const float*,float*,int)=dlsym(h,"kernel");
 int n=300;size_t nb=n*n*4;float*a=aligned_alloc(1<<21,4<<20),*b=a+nb/4+1104,*c=b+nb/4+1104;
 for(int i=0;i<n*n;i++){a[i]=(rand()%1000)/500.0-1;b[i]=(rand()%1000)/500.0-1;}
 double t[2][30];
 for(int rep=0;rep<10;rep++){ for(int m=0;m<2;m++){ for(int i=0;i<30;i++){
   if(m==1){struct timespec g={0,3000000};nanosleep(&g,0);}  /* the core idles 3 ms before the call */
   else {double e=now()+3e6; while(now()<e);}  /* the core stays busy 3 ms before the call */
   flush(a,nb);flush(b,nb);flush(c,nb);double t0=now();k(a,b,c,n);t[m][i]=now()-t0;}
   qsort(t[m],30,sizeof(double),cmp);}
  printf("busy-before %.0f us  idle-before %.0f us  ratio %.3f\n",t[0][15]/1e3,t[1][15]/1e3,t[1][15]/t[0][15]);}
}
