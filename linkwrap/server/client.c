/* linkwrap's native entry point: hands the link to the warm link server (server.py).
 *
 * A Python process per link costs ~10 ms before linkwrap's first line runs; this
 * client costs well under one. It connects to the server of this user and this
 * world (uid, cgroups, mount/pid/user namespaces and linkwrap install: the socket's
 * name is a hash of them, computed as server.py's world_key() does), sends at once
 * its argv, environment, working directory, umask, resource limits and cgroups; the
 * server's child takes fds 0-2 and the jobserver's from it ('T'), or asks for them
 * ('S': sent as SCM_RIGHTS); it forwards SIGINT/SIGTERM/SIGHUP as one byte each, and
 * exits with the link's status or dies of its signal.
 *
 * Whatever goes wrong before the server has taken the link (no server, a stale
 * socket, another uid, another version, a refusal, no answer in time) ends in
 * exec of the Python entry point LW_SCRIPT, which links as before and starts a
 * server for the next links. A build never hangs or fails because of the server.
 *
 * Nothing is run or reached through a directory another user could change (issue 31:
 * a shared LINKWRAP_HOME's owner swapping bin/<hash> for their own): LW_SCRIPT's
 * directory and the run directory are checked as paths.py's open_trusted_dir checks
 * them (trusted_dir()); when the script's fails, the client neither connects nor runs it:
 * it execs the driver itself.
 *
 * `linkwrap install` prepends LW_SCRIPT, LW_VERSION and LW_INSTALL and compiles it
 * with the system's cc (statically where the C library allows: no dynamic loader's
 * work per link). Built into the wheel (setup.py: LW_WHEEL), it is pip's linkwrap-cc
 * command and knows no path at build time: see wheel_paths().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static char **g_argv;
static int g_sock = -1;

/* LW_SCRIPT by the real path of its directory, once trusted_dir() passed it ("" else); else why not:
 * g_script_errno (missing), or g_untrusted (the directory another user could change, and how). */
static char g_script[PATH_MAX + 256];
static int g_script_errno;
static int g_sigint_ignored; /* the caller started this client with SIGINT ignored */
static char g_untrusted[PATH_MAX + 64];

#ifdef LW_WHEEL
/* The wheel's client: LW_SCRIPT and LW_INSTALL are found when it starts (wheel_paths()). */
static char g_wheel_script[PATH_MAX + 16];
static char g_wheel_install[24];
#define LW_SCRIPT g_wheel_script
#define LW_INSTALL g_wheel_install
#endif

static void fallback(const char *why) {
    if (g_sock >= 0)
        close(g_sock);
    setenv("LINKWRAP_SERVER_FALLBACK", why, 1);
#ifdef LW_WHEEL
    /* The server the script starts then listens where this client looks. */
    if (g_wheel_install[0])
        setenv("LINKWRAP_SERVER_INSTALL", g_wheel_install, 1);
#endif
    char *name = g_argv[0];
    errno = g_script_errno;
    if (g_script[0]) {
        /* A ^C while Python starts would print "Fatal Python error: init_import_site" (Python
         * installs its KeyboardInterrupt handler only over SIG_DFL): the script starts with SIGINT
         * ignored and linkwrap.cc puts SIG_DFL back, as templates/launcher.py's shell part does;
         * one the caller ignored (nohup) stays ignored. */
        if (!g_sigint_ignored) {
            signal(SIGINT, SIG_IGN);
            setenv("LINKWRAP_SIGINT", "default", 1);
        }
        g_argv[0] = g_script;
        execv(g_script, g_argv);
        if (!g_sigint_ignored) {
            signal(SIGINT, SIG_DFL);
            unsetenv("LINKWRAP_SIGINT");
        }
    }
    /* linkwrap is gone, or not to be trusted: link exactly as asked, and say why. */
    if (g_untrusted[0])
        fprintf(stderr, "linkwrap: warning: %s: linkwrap's directory not used; linking without linkwrap "
                        "(set LINKWRAP_HOME to a directory of your own and run `linkwrap install` again)\n",
                g_untrusted);
    else
        fprintf(stderr, "linkwrap: warning: cannot run %s (%s); linking without linkwrap (run `linkwrap install` "
                        "again)\n", LW_SCRIPT, strerror(errno));
    char **args = g_argv + 1;
    const char *base = strrchr(name, '/');
    if (strcmp(base ? base + 1 : name, "linkwrap-launch") == 0) {
        if (args[0] && strcmp(args[0], "--") == 0)
            args++;
    } else {
        const char *cc = getenv("LINKWRAP_CC");
        g_argv[0] = (char *)(cc && *cc ? cc : "cc");
        args = g_argv;
    }
    if (args[0])
        execvp(args[0], args);
    _exit(127);
}

/* A growable buffer of NUL-terminated strings: the request's payload. */
static char *buf;
static size_t len, cap;

static void put(const char *s, size_t n) {
    if (len + n + 1 > cap) {
        cap = (len + n + 1) * 2 + 4096;
        buf = realloc(buf, cap);
        if (!buf)
            fallback("memory");
    }
    memcpy(buf + len, s, n);
    buf[len + n] = 0;
    len += n + 1;
}

static void put_str(const char *s) { put(s, strlen(s)); }

static void put_num(long v) {
    char t[32];
    put(t, (size_t)snprintf(t, sizeof t, "%ld", v));
}

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static unsigned long ns_inode(const char *name) {
    char p[64];
    struct stat st;
    snprintf(p, sizeof p, "/proc/self/ns/%s", name);
    return stat(p, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* /proc/self/cgroup as read for the key: the server's child compares it with its own and
 * joins the client's groups only when they differ. Cut short: sent empty ("read it"). */
static char g_cgroup[8192];
static size_t g_cgroup_len;

/* The socket's name: FNV-1a 64 of "uid\ncgroup file\nmnt\npid\nuser\ninstall". */
static void world_key(char out[17]) {
    char t[256];
    uint64_t h = 14695981039346656037ULL;
    int n = snprintf(t, sizeof t, "%u\n", (unsigned)geteuid());
    h = fnv(h, t, (size_t)n);
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while ((r = read(fd, g_cgroup + g_cgroup_len, sizeof g_cgroup - g_cgroup_len)) > 0) {
            h = fnv(h, g_cgroup + g_cgroup_len, (size_t)r);
            g_cgroup_len += (size_t)r;
            if (g_cgroup_len == sizeof g_cgroup) { /* longer than kept: hash the rest, send none */
                while ((r = read(fd, t, sizeof t)) > 0)
                    h = fnv(h, t, (size_t)r);
                g_cgroup_len = 0;
                g_cgroup[0] = 0;
                break;
            }
        }
        close(fd);
    }
    n = snprintf(t, sizeof t, "\n%lu\n%lu\n%lu\n%s", ns_inode("mnt"), ns_inode("pid"), ns_inode("user"), LW_INSTALL);
    h = fnv(h, t, (size_t)n);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* paths.py's open_trusted_dir, minimal: realpath() (the kernel's walk), then each component of that
 * opened from the one before with O_NOFOLLOW (a symlink met: the path changed since) and checked by
 * fstat: root's or ours, writable by no one else -- but a sticky one (/tmp), where only an entry's
 * owner can rename it: the next must be root's or ours -- and the last ours and private. What is
 * run or reached afterwards goes by the fd or by real, never by dir. -> the fd; -1: missing (errno),
 * or why[0] set: "<directory> is owned by uid N" / "is writable by others" / "changed (a symlink)". */
static int trusted_dir(const char *dir, char real[PATH_MAX], char *why, size_t whylen) {
    why[0] = 0;
    if (!realpath(dir, real))
        return -1;
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t at = 0; /* real[0..at): the directory fd is */
    for (;;) {
        struct stat s;
        size_t from = at;
        while (real[from] == '/')
            from++;
        int last = real[from] == 0;
        if (fd < 0 || fstat(fd, &s) != 0)
            return -1;
        int others = (s.st_mode & S_IWOTH) || ((s.st_mode & S_IWGRP) && s.st_gid != getegid());
        int theirs = s.st_uid != geteuid() && (last || s.st_uid != 0);
        if (theirs || (others && (last || !(s.st_mode & S_ISVTX)))) {
            if (theirs)
                snprintf(why, whylen, "%.*s is owned by uid %u", (int)(at ? at : 1), real, (unsigned)s.st_uid);
            else
                snprintf(why, whylen, "%.*s is writable by other users", (int)(at ? at : 1), real);
            close(fd);
            return -1;
        }
        if (last)
            return fd;
        size_t n = strcspn(real + from, "/");
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            close(fd);
            return -1;
        }
        memcpy(name, real + from, n);
        name[n] = 0;
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        at = from + n;
        if (next < 0 && errno == ELOOP)
            snprintf(why, whylen, "%.*s changed while it was checked (a symbolic link)", (int)at, real);
        if (next < 0)
            return -1;
        fd = next;
    }
}

#ifdef LW_WHEEL
/* pip (or pipx, uv, an editable or --user install) put this file in a bin directory, with the console
 * script <this file>-python beside it (pyproject.toml): that is LW_SCRIPT. The install is this
 * directory, by its real path (a symlink to us, as pipx makes, names the same one): "w" and FNV-1a 64
 * of it, as lifetime.py's wheel_install_id() computes it. */
static void wheel_paths(void) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return; /* no /proc: no script, so the driver links (fallback) */
    self[n] = 0;
    snprintf(g_wheel_script, sizeof g_wheel_script, "%s-python", self);
    char *slash = strrchr(self, '/');
    size_t dir = slash && slash != self ? (size_t)(slash - self) : 1;
    snprintf(g_wheel_install, sizeof g_wheel_install, "w%016llx",
             (unsigned long long)fnv(14695981039346656037ULL, self, dir));
}
#endif

/* LW_SCRIPT's directory checked: g_script set, or why not (see there). */
static void check_script(void) {
    char dir[PATH_MAX], real[PATH_MAX];
    if (!LW_SCRIPT[0]) {
        g_script_errno = ENOENT;
        return;
    }
    const char *slash = strrchr(LW_SCRIPT, '/');
    snprintf(dir, sizeof dir, "%.*s", (int)(slash ? slash - LW_SCRIPT : 0), LW_SCRIPT);
    int fd = trusted_dir(dir[0] ? dir : "/", real, g_untrusted, sizeof g_untrusted);
    g_script_errno = errno;
    if (fd < 0)
        return;
    close(fd);
    snprintf(g_script, sizeof g_script, "%s/%s", strcmp(real, "/") ? real : "", slash ? slash + 1 : LW_SCRIPT);
}

/* The run directory, as server.py's run_dir(): ours, 0700, not a symlink, trusted_dir() above. */
static int open_run_dir(void) {
    char p[4096];
    const char *home = getenv("LINKWRAP_HOME"), *rt = getenv("XDG_RUNTIME_DIR");
    const char *st = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
    if (home && *home)
        snprintf(p, sizeof p, "%s/run", home);
    else if (rt && rt[0] == '/')
        snprintf(p, sizeof p, "%s/linkwrap", rt);
    else if (st && st[0] == '/')
        snprintf(p, sizeof p, "%s/linkwrap/run", st);
    else if (h && *h)
        snprintf(p, sizeof p, "%s/.local/state/linkwrap/run", h);
    else
        return -1;
    char real[PATH_MAX], why[PATH_MAX + 64];
    int fd = trusted_dir(p, real, why, sizeof why);
    struct stat s;
    if (fd < 0 || fstat(fd, &s) != 0 || s.st_uid != geteuid() || (s.st_mode & 077)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* "--jobserver-auth=R,W" (or --jobserver-fds) in MAKEFLAGS / CARGO_MAKEFLAGS: those fds go too. */
static int jobserver_fds(int *fds, int max) {
    const char *vars[] = {"CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"};
    int n = 0;
    for (int v = 0; v < 3; v++) {
        const char *s = getenv(vars[v]);
        while (s && (s = strstr(s, "--jobserver-")) != NULL) {
            const char *eq = strchr(s, '=');
            s += 12;
            int r, w;
            if (eq && strncmp(eq + 1, "fifo:", 5) != 0 && sscanf(eq + 1, "%d,%d", &r, &w) == 2) {
                int pair[2] = {r, w};
                for (int k = 0; k < 2; k++) {
                    int fd = pair[k], seen = fd <= 2 || fcntl(fd, F_GETFD) < 0;
                    for (int j = 0; j < n && !seen; j++)
                        seen = fds[j] == fd;
                    if (!seen && n < max)
                        fds[n++] = fd;
                }
            }
        }
    }
    return n;
}

/* The fds, as SCM_RIGHTS with one byte (a stream socket carries no ancillary data alone). */
static void send_fds(const int *fds, int nfds) {
    struct iovec iov = {(void *)"R", 1};
    char ctl[CMSG_SPACE(sizeof(int) * 19)];
    memset(ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                         .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    if (sendmsg(g_sock, &msg, MSG_NOSIGNAL) != 1)
        fallback("protocol");
}

static volatile sig_atomic_t g_caught;

static void forward(int sig) {
    unsigned char b = (unsigned char)sig;
    if (!g_caught)
        g_caught = sig;
    int saved = errno;
    if (write(g_sock, &b, 1) < 0) {
    }
    errno = saved;
}

/* A command line that never reaches the linker (`cc -c`, `-E`, `--version`…) is the driver's
 * alone: args.links() in Python, the same lists and the same walk (tests/server/test_client.py
 * feeds both one table). 1: surely not a link; 0: a link, or an @file only Python reads. */
static const char *const STOPS[] = {
    "-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "-###", "--help", "--target-help", "--version",
    "-dumpversion", "-dumpfullversion", "-dumpmachine", "-dumpspecs", "-print-search-dirs",
    "-print-libgcc-file-name", "-print-multiarch", "-print-multi-directory", "-print-multi-lib",
    "-print-multi-os-directory", "-print-sysroot", "-print-sysroot-headers-suffix", "--analyze", NULL};
static const char *const STOP_PREFIXES[] = {"-print-file-name=", "-print-prog-name=", "--help=", NULL};
static const char *const SKIPS_VALUE[] = {
    "-o", "-L", "-l", "-T", "-e", "-u", "-z", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-x",
    "-isystem", "-include", "-imacros", "-iquote", "-idirafter", "-iprefix", "-iwithprefix", "-isysroot",
    "--sysroot", "-MF", "-MT", "-MQ", "-MJ", "-B", "-I", "-D", "-U", "-aux-info", "--param", "-arch", "-target",
    NULL};

static int listed(const char *arg, const char *const *list, int prefix) {
    for (; *list; list++)
        if (prefix ? strncmp(arg, *list, strlen(*list)) == 0 : strcmp(arg, *list) == 0)
            return 1;
    return 0;
}

static int not_a_link(char **args) {
    for (char **a = args; *a; a++)
        if ((*a)[0] == '@')
            return 0;
    int skip = 0;
    for (char **a = args; *a; a++) {
        if (skip)
            skip = 0;
        else if (listed(*a, SKIPS_VALUE, 0))
            skip = 1;
        else if (listed(*a, STOPS, 0) || listed(*a, STOP_PREFIXES, 1))
            return 1;
    }
    return 0;
}

/* Not a link: exec the driver as the server would have answered ('D'), without asking it. */
static void driver_if_not_a_link(char **argv) {
    const char *base = strrchr(argv[0], '/');
    char **args = argv + 1;
    if (strcmp(base ? base + 1 : argv[0], "linkwrap-launch") == 0) {
        if (args[0] && strcmp(args[0], "--") == 0)
            args++;
        /* linkwrap-launch's own usage and --version are the script's to answer */
        if (!args[0] || strcmp(args[0], "-V") == 0 || strcmp(args[0], "--version") == 0 ||
            strcmp(args[0], "-h") == 0 || strcmp(args[0], "--help") == 0 || !not_a_link(args + 1))
            return;
    } else {
        if (!not_a_link(args))
            return;
        const char *cc = getenv("LINKWRAP_CC");
        argv[0] = (char *)(cc && *cc ? cc : "cc");
        args = argv;
    }
    execvp(args[0], args);
    fprintf(stderr, "linkwrap: error: cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
}

int main(int argc, char **argv) {
    (void)argc;
    g_argv = argv;
    struct sigaction start;
    g_sigint_ignored = sigaction(SIGINT, NULL, &start) == 0 && start.sa_handler == SIG_IGN;
    driver_if_not_a_link(argv);
#ifdef LW_WHEEL
    wheel_paths();
#endif
    check_script();
    if (!g_script[0])
        fallback(g_untrusted[0] ? "untrusted" : "absent"); /* the driver: no server, no script */
    const char *off = getenv("LINKWRAP_SERVER");
    if (off && strcmp(off, "off") == 0)
        fallback("off");
    int dir = open_run_dir();
    if (dir < 0)
        fallback("absent");
    char key[17], path[108];
    world_key(key);

    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(path, sizeof path, "/proc/self/fd/%d/s-%s", dir, key);
    strcpy(sa.sun_path, path);
    g_sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (g_sock < 0)
        fallback("absent");
    /* A full backlog or a server that stopped reading must not hang the build: connect and
     * send give up after LW_TIMEOUT_S too. */
    struct timeval tv = {LW_TIMEOUT_S, 0};
    setsockopt(g_sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(g_sock, (struct sockaddr *)&sa, sizeof sa) != 0)
        fallback(errno == EAGAIN || errno == EINPROGRESS ? "timeout" : "absent");
    close(dir);
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(g_sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != geteuid())
        fallback("another uid");
#ifdef PR_SET_PTRACER
    /* Under Yama's ptrace_scope 1 the server's children may then take our fds themselves
     * (pidfd_getfd) instead of waiting for us to send them; elsewhere EINVAL, and nothing changes. */
    prctl(PR_SET_PTRACER, (unsigned long)cred.pid, 0, 0, 0);
#endif

    /* Made once connected: the spare's wake-up, on a small machine its CPU's too, overlaps it. */
    int fds[3 + 16] = {0, 1, 2};
    int nfds = 3 + jobserver_fds(fds + 3, 16);
    char cwd[8192];
    if (!getcwd(cwd, sizeof cwd))
        fallback("cwd");
    const char *name = strrchr(argv[0], '/');
    len = 8; /* the header's place: magic and payload length */
    put_str(LW_VERSION);
    put_str(name ? name + 1 : argv[0]);
    put_str(cwd);
    mode_t mask = umask(0);
    umask(mask);
    put_num((long)mask);
    put_num(RLIM_NLIMITS);
    for (int i = 0; i < RLIM_NLIMITS; i++) {
        struct rlimit rl;
        if (getrlimit(i, &rl) != 0)
            fallback("limits");
        put_num(rl.rlim_cur == RLIM_INFINITY ? -1L : (long)rl.rlim_cur);
        put_num(rl.rlim_max == RLIM_INFINITY ? -1L : (long)rl.rlim_max);
    }
    put(g_cgroup, g_cgroup_len);
    int n = 0;
    while (argv[n])
        n++;
    put_num(n - 1);
    for (int i = 1; i < n; i++)
        put_str(argv[i]);
    n = 0;
    while (environ[n])
        n++;
    put_num(n);
    for (int i = 0; i < n; i++)
        put_str(environ[i]);
    put_num(nfds);
    for (int i = 0; i < nfds; i++)
        put_num(fds[i]);
    uint32_t head[2] = {0x3343574cu /* "LWC3" */, (uint32_t)(len - 8)};
    memcpy(buf, head, sizeof head);

    /* The request goes at once, without the fds: fds queued on a socket nobody reads (a wedged
     * server) would keep the build's pipes open. The server's child answers 'T' when it took
     * the fds from us itself (pidfd_getfd) or 'S' when we must send them; or 'F' or 'V'. One
     * that says nothing within LW_TIMEOUT_S is wedged: the script links. */
    for (size_t off2 = 0; off2 < len;) {
        ssize_t w = send(g_sock, buf + off2, len - off2, MSG_NOSIGNAL);
        if (w <= 0)
            fallback(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "timeout" : "protocol");
        off2 += (size_t)w;
    }

    setsockopt(g_sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char a = 0;
    if (recv(g_sock, &a, 1, 0) != 1)
        fallback("timeout");
    if (a != 'T' && a != 'S')
        fallback(a == 'V' ? "version" : "refused");
    /* Taken: from here on the link may take as long as it takes. */
    tv.tv_sec = 0;
    setsockopt(g_sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(g_sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (a == 'S')
        send_fds(fds, nfds);

    struct sigaction act = {.sa_handler = forward};
    sigemptyset(&act.sa_mask);
    int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        struct sigaction old;
        sigaction(sigs[i], NULL, &old);
        if (old.sa_handler != SIG_IGN) /* started with it ignored (nohup): so is the link */
            sigaction(sigs[i], &act, NULL);
    }

    /* The answer: "X<status>\n", "K<signal>\n" (complete at the newline: no wait for the
     * child's close), or "D" and a NUL-separated argv to exec (complete at the end). */
    len = 0;
    char chunk[4096];
    for (;;) {
        ssize_t r = recv(g_sock, chunk, sizeof chunk, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        put(chunk, (size_t)r);
        len--; /* put() adds a NUL: keep the bytes as they came */
        if ((buf[0] == 'X' || buf[0] == 'K') && memchr(buf, '\n', len))
            break;
    }
    if (len == 0 && !g_caught)
        fallback("lost"); /* the server died during the link: link again, as before */
    buf[len] = 0;
    if (len == 0) { /* interrupted, and the link ended before it could say so */
        buf[0] = 'K';
        snprintf(buf + 1, 16, "%d", (int)g_caught);
    }
    if (buf[0] == 'X')
        exit(atoi(buf + 1));
    if (buf[0] == 'K') {
        int sig = atoi(buf + 1);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), sig);
        _exit(128 + sig);
    }
    if (buf[0] == 'F' || buf[0] == 'V')
        fallback(buf[0] == 'V' ? "version" : "refused");
    if (buf[0] == 'D') {
        char *args[4096];
        int k = 0;
        for (char *p = buf + 1; p < buf + len && k < 4095; p += strlen(p) + 1)
            args[k++] = p;
        args[k] = NULL;
        if (k > 0) {
            close(g_sock);
            execvp(args[0], args);
            fprintf(stderr, "linkwrap: error: cannot run %s: %s\n", args[0], strerror(errno));
            _exit(127);
        }
    }
    fallback("protocol");
    return 127;
}
