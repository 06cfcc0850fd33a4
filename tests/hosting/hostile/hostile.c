/* A hostile static program for the sandbox's tests: argv[1] names the one thing it tries;
   it prints `outcome: blocked|allowed DETAIL` (or is killed trying). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int say(int ok, const char *what) {
    if (ok) printf("outcome: allowed %s\n", what);
    else printf("outcome: blocked %s: %s\n", what, strerror(errno));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *a = argv[1];
    if (!strcmp(a, "socket")) return say(socket(AF_INET, SOCK_STREAM, 0) >= 0, "socket(AF_INET)");
    if (!strcmp(a, "netlink")) return say(socket(AF_NETLINK, SOCK_RAW, 0) >= 0, "socket(AF_NETLINK)");
    if (!strcmp(a, "ptrace")) return say(ptrace(PTRACE_ATTACH, 1, 0, 0) == 0, "ptrace(ATTACH, 1)");
    if (!strcmp(a, "kill")) return say(kill(atoi(argv[2]), SIGKILL) == 0, "kill(host pid)");
    if (!strcmp(a, "unshare")) return say(unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
    if (!strcmp(a, "mount")) return say(mount("none", "/tmp", "tmpfs", 0, 0) == 0, "mount(tmpfs)");
    if (!strcmp(a, "int80")) {  /* a 32-bit system call: another ABI, outside the filter */
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");  /* getpid */
        return say(1, "int 0x80 getpid");
    }
    return 2;
}
