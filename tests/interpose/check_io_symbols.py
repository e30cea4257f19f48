#!/usr/bin/env python3
"""Every I/O entry point the C library exports is interposed, or left out
on purpose for a stated reason.

A system call cannot take the runtime's page fault, so a read into shared
memory whose data is on the device, through a name the runtime does not
interpose, fails with EFAULT.  This lists the C library's dynamic symbols of
the read, write, receive, send and stdio block families (every offset width,
every fortified form, every second name), of the other calls whose
buffers the kernel fills or reads (getrandom, getentropy, poll, ppoll and
the epoll waits; extended attributes, directory entries, message queues,
another process's memory), and of those that fill or read one structure
(the stat families, pipe, socketpair, the waits, select, epoll_ctl, socket
addresses and options, the limits, getrusage, uname, sysinfo, times,
signals waited for, clocks and timers, scheduling, identities, offsets;
ioctl's and fcntl's, opened in place: interpose/kernel_controls.cpp), of
those that
give a stream a buffer the C library fills itself, of asynchronous I/O
(whose helper threads make the system calls), of those that set a
signal's action or mask (not I/O: the same check), of those that
take a path name, and of those that start a program (the exec family,
posix_spawn, system, popen), and checks each against what libadsm.so
exports.

  check_io_symbols.py LIBADSM
"""
import re
import subprocess
import sys

# Names of those families that move no program buffer, or only ones a
# program does not put in shared memory.
LEFT_OUT = {
    "readahead": "moves no program buffer",
    "readdir": "returns the C library's own buffer",
    "readdir64": "returns the C library's own buffer",
    "readdir_r": "a directory entry, not bulk data",
    "readdir64_r": "a directory entry, not bulk data",
    "__freadable": "asks a stream a question, moves no data",
    "__freading": "asks a stream a question, moves no data",
    "__read_nocancel": "GLIBC_PRIVATE: called only inside the C library",
    "__write_nocancel": "GLIBC_PRIVATE: called only inside the C library",
    "__pread64_nocancel": "GLIBC_PRIVATE: called only inside the C library",
    "__fstat64": "GLIBC_PRIVATE: called only inside the C library",
    "__open_nocancel": "GLIBC_PRIVATE: called only inside the C library",
    "__open64_nocancel": "GLIBC_PRIVATE: called only inside the C library",
    "setlinebuf": "gives a stream no buffer of the program's",
    "aio_fsync": "moves no program buffer",
    "aio_fsync64": "moves no program buffer",
    "aio_init": "tunes the C library's helper threads, moves no buffer",
    "sigrelse": "only unblocks",
    "siginterrupt": "writes back the action it reads, the runtime's handler",
    "__xpg_sigpause": "takes one signal off the current mask, which lacks SIGSEGV",
    "sigvec": "an old binary's only: the C library has no default version of it",
    "sigstack": "gives the kernel no stack size; the linker warns against it",
    "__clock_gettime": "GLIBC_PRIVATE: called only inside the C library",
    "__sigtimedwait": "GLIBC_PRIVATE: called only inside the C library",
    "time": "answered in the vDSO, in user mode, where the runtime's fault is taken",
    "gettimeofday": "answered in the vDSO, in user mode, where the runtime's fault is taken",
    "__gettimeofday": "answered in the vDSO, in user mode, where the runtime's fault is taken",
    "adjtime": "the C library reads and fills it around a structure of its own",
    "ntp_gettime": "the C library fills it from a structure of its own",
    "ntp_gettimex": "the C library fills it from a structure of its own",
    "stime": "an old binary's only: the C library has no default version of it",
    "ustat": "an old binary's only: the C library has no default version of it",
    "sysctl": "an old binary's only, and gone from the kernel",
    "__sysctl": "an old binary's only, and gone from the kernel",
    "vmsplice": "the pipe keeps the pages themselves, not a copy: a staged copy would change under it",
    "syslog": "formats its message in the C library's own buffer",
    "__syslog_chk": "formats its message in the C library's own buffer",
    "prctl": "options whose arguments' kinds differ, none of them bulk data",
    "ptrace": "a tracer's calls on another process's memory",
    "quotactl": "its argument's kind depends on the command",
    "fsconfig": "its value's kind (string, blob, path, descriptor) depends on the command",
}

# The I/O families, and the other calls whose buffers the kernel fills or
# reads (random bytes, readiness arrays: interpose/kernel_buffers.cpp).
FAMILY = re.compile(r"^(__)?(read|pread|write|pwrite|recv|send|fread|fwrite|getrandom|getentropy|poll|ppoll|epoll_wait|epoll_pwait)")
# Buffers the C library fills and drains with system calls of its own: a
# stream's (interpose/stream_buffers.cpp), and those of asynchronous I/O,
# whose helper threads make the calls, with the calls that end a request
# (interpose/async_io.cpp).
BUFFERS = re.compile(r"^(setv?buf|setbuffer|setlinebuf|aio_[a-z]+(64)?|lio_listio(64)?)$")
# Not I/O, but covered the same way: every name that sets a signal's action
# or mask inside the C library, past sigaction and sigprocmask, which could
# take SIGSEGV from the runtime or block it (interpose/signals.cpp).
SIGNALS = re.compile(r"^(__)?(sysv_signal|bsd_signal|signal|ssignal|sigaction|sigset|sigignore|sighold|sigrelse|"
                     r"sigblock|sigsetmask|sigprocmask|pthread_sigmask|sigsuspend|siginterrupt|sigpause|"
                     r"xpg_sigpause|sigvec|sigstack|sigaltstack)$")
# Calls that fill or read one structure of the program's
# (interpose/kernel_structs.cpp), by whole name: file and file system status,
# descriptor pairs, a child's status and usage, readiness sets, socket
# addresses and options, the process's facts.
STRUCTS = re.compile(r"^(__)?((f|l)?x?stat(at)?(64)?|statx|f?statv?fs(64)?|pipe2?|socketpair|wait(pid|3|4|id)?|"
                     r"p?select|epoll_ctl|accept4?|getsockname|getpeername|[gs]etsockopt|connect|bind|"
                     r"getrusage|[gs]etrlimit(64)?|prlimit(64)?|[gs]etitimer|uname|sysinfo|times|"
                     r"(clock_)?nanosleep|ioctl|fcntl(64)?|"
                     r"sigtimedwait|sigwaitinfo|sigwait|sigpending|signalfd|"
                     r"clock_(gettime|getres|settime|adjtime)|(ntp_)?adjtimex?|ntp_gettimex?|s?time|[gs]ettimeofday|"
                     r"timer_(create|settime|gettime)|timerfd_(settime|gettime)|"
                     r"sched_(getaffinity|setaffinity|getparam|setparam|setscheduler|rr_get_interval)|getcpu|"
                     r"[gs]etgroups|getgroups_chk|getres[ug]id|cap[gs]et|sendfile(64)?|splice|copy_file_range|"
                     r"ustat|sysctl|prctl|ptrace|quotactl)$")
# Buffers of a size the program gives, outside the I/O families
# (interpose/kernel_values.cpp): extended attributes' values and lists,
# directory entries, the messages of System V and POSIX queues with their
# controls, another process's memory, the kernel's log, resident pages.
VALUES = re.compile(r"^(__)?(getdents64|msg(rcv|snd|ctl)|sem(op|timedop|ctl)|shmctl|"
                    r"mq_(open|open_2|unlink|send|receive|timedsend|timedreceive|getattr|setattr|notify)|"
                    r"process_vm_(readv|writev)|vmsplice|klogctl|syslog(_chk)?|mincore|fsconfig)$")
# Calls that take a path the kernel reads (interpose/kernel_paths.cpp; the
# stat families above), and those that start a program from strings
# (interpose/process_strings.cpp), by whole name.
PATHS = re.compile(r"^(__)?(open(at)?(64)?(_2|_nocancel)?|creat(64)?|f?reopen(64)?|fopen(64)?|opendir|"
                   r"(f|euid|e)?access(at)?|pathconf|readlink(at)?(_chk)?|[fl]?(get|set|list|remove)xattr|"
                   r"mkdir(at)?|rmdir|unlink(at)?|remove|rename(at2?)?|(sym)?link(at)?|mkfifo(at)?|x?mknod(at)?|"
                   r"l?chmod|fchmodat|l?chown|fchownat|truncate(64)?|utimes?|lutimes|futimesat|utimensat|"
                   r"chdir|chroot|getcwd(_chk)?|u?mount2?|swapo(n|ff)|acct|inotify_add_watch|fanotify_mark|"
                   r"name_to_handle_at|f?exec(ve|veat|v|vp|vpe|l|le|lp)|posix_spawnp?|system|popen)$")


def dynamic_symbols(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "TtWiV":
            names.add(parts[2].split("@")[0])
    return names


def libc_of(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.search(r"libc\.so\.6 => (\S+)", line)
        if m:
            return m.group(1)
    sys.exit("check_io_symbols: %s does not link the C library (ldd: %s)" % (path, out))


def main():
    libadsm = sys.argv[1]
    libc = libc_of(libadsm)
    ours = dynamic_symbols(libadsm)
    family = sorted(n for n in dynamic_symbols(libc) if FAMILY.match(n) or STRUCTS.match(n) or PATHS.match(n) or BUFFERS.match(n)
              or SIGNALS.match(n) or VALUES.match(n))
    missing = [n for n in family if n not in ours and n not in LEFT_OUT]
    interposed = [n for n in family if n in ours]
    left_out = [n for n in family if n not in ours and n in LEFT_OUT]
    print("%s: %d I/O entry points" % (libc, len(family)))
    print("interposed (%d): %s" % (len(interposed), " ".join(interposed)))
    for n in left_out:
        print("left out: %-20s %s" % (n, LEFT_OUT[n]))
    if missing:
        print("NOT interposed and not left out on purpose: %s" % " ".join(missing))
        sys.exit(1)
    print("every I/O entry point is interposed or left out on purpose")


if __name__ == "__main__":
    main()
