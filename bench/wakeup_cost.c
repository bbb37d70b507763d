/* What one timer sleep and wake-up costs a thread on this machine, and how late it wakes: the
 * floor under CPU per request of an open loop that sleeps between sends (docs/benchmarks.md).
 *
 * A loop of absolute timerfd sleeps GAP_US apart in an edge-triggered epoll set, with 1 ns timer
 * slack, as candor's load threads sleep; or (mode spin) a spin on the clock to the same
 * instants. Prints CPU (user + system, getrusage) per iteration and the lateness quantiles.
 *
 *   cc -O2 -o /tmp/wakeup_cost bench/wakeup_cost.c
 *   taskset -c 0 /tmp/wakeup_cost GAP_US ITERATIONS timerfd|spin
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static double cpu_s(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[3], "timerfd") && strcmp(argv[3], "spin"))) {
        fprintf(stderr, "usage: %s GAP_US ITERATIONS timerfd|spin\n", argv[0]);
        return 2;
    }
    uint64_t gap = strtoull(argv[1], 0, 10) * 1000;
    int n = atoi(argv[2]);
    int spin = !strcmp(argv[3], "spin");
    if (gap == 0 || n < 100) {
        fprintf(stderr, "GAP_US must be > 0 and ITERATIONS >= 100\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = 1};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    uint64_t *late = malloc(sizeof(uint64_t) * (size_t)n);
    double c0 = cpu_s();
    uint64_t t = now_ns() + gap;
    for (int i = 0; i < n; i++, t += gap) {
        if (spin) {
            while (now_ns() < t)
                __builtin_ia32_pause();
        } else {
            struct itimerspec s = {{0, 0}, {(time_t)(t / 1000000000), (long)(t % 1000000000)}};
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &s, 0);
            struct epoll_event out[4];
            epoll_wait(ep, out, 4, -1);
        }
        uint64_t woke = now_ns();
        late[i] = woke > t ? woke - t : 0;
        if (woke > t + gap) /* overslept a whole gap: start again from now */
            t = woke;
    }
    double cpu = cpu_s() - c0;
    qsort(late, (size_t)n, sizeof(uint64_t), by_value);
    printf("gap %llu us, %s: %.2f CPU us per iteration; lateness p50 %.1f p90 %.1f p99 %.1f max %.1f us\n",
           (unsigned long long)(gap / 1000), argv[3], cpu / n * 1e6, late[n / 2] / 1e3,
           late[n * 9 / 10] / 1e3, late[n * 99 / 100] / 1e3, late[n - 1] / 1e3);
    return 0;
}
