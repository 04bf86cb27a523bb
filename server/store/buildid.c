/*
 * buildid.c — this build's id (see buildid.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "buildid.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <zlib.h>

#ifndef FLOCKD_VERSION
#define FLOCKD_VERSION "0.0.0"
#endif

/* CRC-32 of the running executable; 0 if it cannot be read. */
static unsigned long exe_crc(void)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    unsigned char buf[65536];
    uLong crc = crc32(0, Z_NULL, 0);
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
        crc = crc32(crc, buf, (uInt)n);
    close(fd);
    return crc;
}

/* The path the core's hot loops take on this CPU (sim.c's target_clones). */
static const char *cpu_path(void)
{
#if defined(__x86_64__) && defined(__linux__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? " cpu:avx2" : " cpu:base";
#else
    return "";
#endif
}

const char *buildid(void)
{
    static char id[64];
    if (!id[0])
        snprintf(id, sizeof id, "flockd %s exe:%08lx%s", FLOCKD_VERSION, exe_crc(), cpu_path());
    return id;
}
