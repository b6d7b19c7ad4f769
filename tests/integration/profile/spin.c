/* tests/integration/profile/spin.c — a program that never calls MPI (profile_any.sh): burns CPU in
 * outer() → inner() for the sampler, prints one line, exits with argv[2]. Built without -rdynamic:
 * dladdr cannot name its functions (static, and not exported), the profiler reads its .symtab. */
#include <stdio.h>
#include <stdlib.h>

volatile double sink;

__attribute__((noinline)) static double inner(long n)
{
	double a = 0;
	for (long i = 0; i < n; i++)
		a += (double)i * 1e-9;
	return a;
}

__attribute__((noinline)) static double outer(long n)
{
	return inner(n) + inner(n / 2);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	sink = outer(n);
	printf("spin %ld\n", n);
	return argc > 2 ? atoi(argv[2]) : 0;
}
