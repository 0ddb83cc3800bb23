// A minimal OpenCL runner for instrumented kernels on machines without cargo or libclang.
// usage: run FILE KERNEL "OPTIONS" DIM G0,G1,G2 L0,L1,L2|- O0,O1,O2|- args...
// args: buf:N (N zeroed uints)  bufi:N (0..N-1)  vals:a,b,c  u32:V  i32:V  local:BYTES
// Prints every buffer argument after the launch, one line each ("argI: v0 v1 ...").
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void parse3(const char*s,size_t*o){o[0]=o[1]=o[2]=0;sscanf(s,"%zu,%zu,%zu",&o[0],&o[1],&o[2]);}
int main(int argc,char**argv){
  FILE*f=fopen(argv[1],"rb");fseek(f,0,2);long n=ftell(f);rewind(f);char*src=malloc(n+1);fread(src,1,n,f);src[n]=0;
  cl_platform_id pl;cl_device_id dev;
  if(clGetPlatformIDs(1,&pl,0)||clGetDeviceIDs(pl,CL_DEVICE_TYPE_ALL,1,&dev,0)){printf("no OpenCL platform/device\n");return 1;}
  cl_int e;cl_context ctx=clCreateContext(0,1,&dev,0,0,&e);cl_command_queue q=clCreateCommandQueue(ctx,dev,0,&e);
  cl_program p=clCreateProgramWithSource(ctx,1,(const char**)&src,0,&e);
  e=clBuildProgram(p,1,&dev,argv[3],0,0);
  if(e){char log[100000];clGetProgramBuildInfo(p,dev,CL_PROGRAM_BUILD_LOG,sizeof log,log,0);printf("BUILD FAILED %d\n%s\n",e,log);return 1;}
  cl_kernel k=clCreateKernel(p,argv[2],&e);if(e){printf("kernel %d\n",e);return 1;}
  int dim=atoi(argv[4]);size_t g[3],l[3],o[3];parse3(argv[5],g);int hasl=strcmp(argv[6],"-");if(hasl)parse3(argv[6],l);int haso=strcmp(argv[7],"-");if(haso)parse3(argv[7],o);
  int na=argc-8;cl_mem mems[64]={0};size_t cnt[64]={0};
  for(int i=0;i<na;i++){char*a=argv[8+i];
    if(!strncmp(a,"buf:",4)||!strncmp(a,"bufi:",5)){int idx=a[3]=='i';size_t N=atol(a+(idx?5:4));cl_uint*h=calloc(N,4);if(idx)for(size_t j=0;j<N;j++)h[j]=j;
      mems[i]=clCreateBuffer(ctx,CL_MEM_READ_WRITE|CL_MEM_COPY_HOST_PTR,N*4+4,h,&e);cnt[i]=N;clSetKernelArg(k,i,sizeof(cl_mem),&mems[i]);}
    else if(!strncmp(a,"vals:",5)){cl_uint h[100000];size_t N=0;char*s=a+5;while(*s){h[N++]=strtoul(s,&s,10);if(*s==',')s++;}
      mems[i]=clCreateBuffer(ctx,CL_MEM_READ_WRITE|CL_MEM_COPY_HOST_PTR,N*4,h,&e);cnt[i]=N;clSetKernelArg(k,i,sizeof(cl_mem),&mems[i]);}
    else if(!strncmp(a,"u32:",4)||!strncmp(a,"i32:",4)){cl_int v=atoi(a+4);clSetKernelArg(k,i,4,&v);}
    else if(!strncmp(a,"local:",6)){clSetKernelArg(k,i,atol(a+6),0);}
  }
  e=clEnqueueNDRangeKernel(q,k,dim,haso?o:0,g,hasl?l:0,0,0,0);if(e){printf("enqueue %d\n",e);return 1;}clFinish(q);
  for(int i=0;i<na;i++)if(cnt[i]){cl_uint*h=malloc(cnt[i]*4);clEnqueueReadBuffer(q,mems[i],1,0,cnt[i]*4,h,0,0,0);printf("arg%d:",i);for(size_t j=0;j<cnt[i];j++)printf(" %u",h[j]);printf("\n");}
  return 0;}
