/* stop 60: does a dirty upper AVX/AVX-512 state (XINUSE, xgetbv 1) slow the SSE (-march=x86-64-v2) matmul best-A kernel on this CPU? Modes per rep: clean (vzeroupper), dirty ymm, dirty zmm; best of 15 calls. Build: gcc -O2 -mavx512f upper_state_probe.c -ldl; run: taskset -c 0 ./a.out kernel.so */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <time.h>
#include <string.h>
static uint64_t xinuse(void){ uint32_t lo,hi; __asm__ volatile("xgetbv":"=a"(lo),"=d"(hi):"c"(1)); return ((uint64_t)hi<<32)|lo; }
static void dirty(void){ __asm__ volatile("vpcmpeqd %%ymm8,%%ymm8,%%ymm8":::"xmm8"); }
static void dirty_zmm(void){ __asm__ volatile("vpternlogd $0xff,%%zmm9,%%zmm9,%%zmm9":::"xmm9"); }
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){
  printf("at start xinuse=%#lx\n", xinuse());
  dirty(); printf("after ymm write xinuse=%#lx\n", xinuse());
  __asm__ volatile("vzeroupper"); printf("after vzeroupper xinuse=%#lx\n", xinuse());
  dirty_zmm(); printf("after zmm write xinuse=%#lx\n", xinuse());
  __asm__ volatile("vzeroupper"); printf("after vzeroupper xinuse=%#lx\n", xinuse());
  void *h=dlopen(argv[1],RTLD_NOW); void (*k)(const float*,const float*,float*,int)=dlsym(h,"kernel");
  int n=300; float *a=aligned_alloc(64,n*n*4),*b=aligned_alloc(64,n*n*4),*c=aligned_alloc(64,n*n*4);
  for(int i=0;i<n*n;i++){a[i]=(i%7)*0.1f;b[i]=(i%5)*0.2f;}
  for(int rep=0;rep<6;rep++) for(int mode=0;mode<3;mode++){
    double best=1e18; for(int it=0;it<15;it++){ __asm__ volatile("vzeroupper"); if(mode==1) dirty(); if(mode==2) dirty_zmm();
      double t0=now(); k(a,b,c,n); double t=now()-t0; if(t<best)best=t;}
    printf("rep %d mode %s best %.0f us\n",rep, mode==0?"clean":mode==1?"dirty-ymm":"dirty-zmm", best/1e3);
  }
}
