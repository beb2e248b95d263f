// SPDX-License-Identifier: GPL-2.0

//! .NET's EventPipe user_events sessions (.NET 10) against the module. The tool
//! (`dotnet-trace collect-linux`, one-collect) opens `user_events_data` and passes the
//! descriptor to the runtime over a Unix socket with `SCM_RIGHTS`; the runtime registers its
//! tracepoint on it with a 4-byte enable word and bit 31 (`ep-session-provider.c`), format
//! `u8 version; u16 event_id; __rel_loc u8[] extension; __rel_loc u8[] payload`, and writes
//! each event with one `writev()` of 8 iovecs, retried on `EINTR` (`ep-session.c`): the index,
//! the four header fields, the extension (a metadata label, an activity id label) and the
//! payload. Here this process is the tool and a child (`rue_eventpipe_rs writer FD`) the
//! runtime: it never opens the file, registers in its own memory, writes when the tracer's
//! enable reaches its bit 31, and its word's other bits stay as the program set them.

use rue_guest_tests::{
    decode::Format,
    ensure, run,
    tracefs::{event_exists, expect_status, slowness, wait_event_gone, wait_until, TRACEFS},
    tracer::{Tracer, Via},
    Test,
};
use std::{
    ffi::CString,
    fs::OpenOptions,
    io::Error,
    mem,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    process::{Child, Command},
    ptr,
    sync::atomic::{AtomicU32, Ordering},
};

const NAME: &str = "rue_eventpipe";
const ARGS: &str = "u8 version; u16 event_id; __rel_loc u8[] extension; __rel_loc u8[] payload";
/// EP_SESSION_PROVIDER_TRACEPOINT_ENABLE_BIT.
const ENABLE_BIT: u32 = 31;
/// A bit of the word the program itself uses: the kernel must leave it alone.
const OWN_BIT: u32 = 1 << 0;
const VERSION: u8 = 1;
const EVENT_ID: u16 = 42;
/// Extension: a metadata label (kind 1, metadata id 0x10), then an activity id label (kind 2).
const EXT_META: [u8; 5] = [1, 0x10, 0, 0, 0];
const EXT_ACTIVITY: [u8; 17] = [
    2, b'r', b'u', b'e', b'-', b'a', b'c', b't', b'i', b'v', b'i', b't', b'y', b'-', b'i', b'd',
    b'!',
];
const EBADF: i32 = 9;
const WRITER_ARG: &str = "writer";

/// `_IOWR('*', 0, struct user_reg *)` and `_IOW('*', 2, struct user_unreg *)`: the size field
/// is a pointer's, as in the UAPI header.
const DIAG_IOCSREG: libc::c_ulong = 0xc008_2a00;
const DIAG_IOCSUNREG: libc::c_ulong = 0x4008_2a02;

#[repr(C, packed)]
struct UserReg {
    size: u32,
    enable_bit: u8,
    enable_size: u8,
    flags: u16,
    enable_addr: u64,
    name_args: u64,
    write_index: u32,
}

#[repr(C, packed)]
struct UserUnreg {
    size: u32,
    disable_bit: u8,
    reserved: [u8; 3],
    disable_addr: u64,
}

fn payload() -> Vec<u8> {
    (0..100u32).map(|i| (i * 13 + 1) as u8).collect()
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", Error::last_os_error())
}

/// Sends `text` on a SEQPACKET socket, with `fd` attached as SCM_RIGHTS if given.
fn send(sock: RawFd, text: &str, fd: Option<RawFd>) -> Result<(), String> {
    let mut iov = libc::iovec {
        iov_base: text.as_ptr() as *mut _,
        iov_len: text.len(),
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: an all-zero msghdr is valid (no name, no control, no iovecs).
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: msg_control points at `space` bytes, room for one cmsghdr and one fd, so
        // CMSG_FIRSTHDR is non-null and its header and data lie within `control`.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(mem::size_of::<RawFd>() as u32) as usize;
            ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: msg and everything it points to live across the call.
    if unsafe { libc::sendmsg(sock, &msg, 0) } < 0 {
        return Err(os_err("sendmsg"));
    }
    Ok(())
}

/// Receives one message; returns its text and the descriptor passed with it, if any.
fn recv(sock: RawFd) -> Result<(String, Option<OwnedFd>), String> {
    let mut buf = [0u8; 256];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg points at live buffers of the lengths it gives.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(os_err("recvmsg"));
    }
    if n == 0 {
        return Err("the other side closed the socket".into());
    }
    let mut fd = None;
    // SAFETY: the kernel filled msg_control/msg_controllen; CMSG_FIRSTHDR returns null or a
    // header within it, and an SCM_RIGHTS one carries at least one descriptor, now ours.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if !cmsg.is_null()
            && (*cmsg).cmsg_level == libc::SOL_SOCKET
            && (*cmsg).cmsg_type == libc::SCM_RIGHTS
        {
            fd = Some(OwnedFd::from_raw_fd(ptr::read_unaligned(
                libc::CMSG_DATA(cmsg).cast::<RawFd>(),
            )));
        }
    }
    Ok((String::from_utf8_lossy(&buf[..n as usize]).into_owned(), fd))
}

/// The runtime's side, in the child.
mod writer {
    use super::*;

    /// The tracepoint's enable word, in the writer's memory; the program owns `OWN_BIT`.
    static WORD: AtomicU32 = AtomicU32::new(OWN_BIT);

    fn bit_set() -> bool {
        WORD.load(Ordering::Relaxed) & (1 << ENABLE_BIT) != 0
    }

    fn register(data: RawFd) -> Result<u32, String> {
        let name_args = CString::new(format!("{NAME} {ARGS}")).unwrap();
        let mut reg = UserReg {
            size: mem::size_of::<UserReg>() as u32,
            enable_bit: ENABLE_BIT as u8,
            enable_size: 4,
            flags: 0,
            enable_addr: WORD.as_ptr() as u64,
            name_args: name_args.as_ptr() as u64,
            write_index: 0,
        };
        // SAFETY: reg is a valid user_reg whose pointers (the static word, the string) outlive
        // the call; the word stays valid for the process's life.
        if unsafe { libc::ioctl(data, DIAG_IOCSREG, &mut reg) } < 0 {
            return Err(os_err("DIAG_IOCSREG"));
        }
        Ok(reg.write_index)
    }

    fn unregister(data: RawFd) -> Result<(), String> {
        let unreg = UserUnreg {
            size: mem::size_of::<UserUnreg>() as u32,
            disable_bit: ENABLE_BIT as u8,
            reserved: [0; 3],
            disable_addr: WORD.as_ptr() as u64,
        };
        // SAFETY: unreg is a valid user_unreg naming the static word.
        if unsafe { libc::ioctl(data, DIAG_IOCSUNREG, &unreg) } < 0 {
            return Err(os_err("DIAG_IOCSUNREG"));
        }
        Ok(())
    }

    /// `session_tracepoint_write_event()`'s shape: 8 iovecs, retried on EINTR. Returns the
    /// bytes written or the errno.
    fn write_event(data: RawFd, index: u32) -> Result<isize, i32> {
        let payload = payload();
        let ext_len = (EXT_META.len() + EXT_ACTIVITY.len()) as u32;
        // Each __rel_loc counts from the end of its own field: the extension comes after the
        // payload's loc, the payload after the extension.
        let ext_loc: u32 = ext_len << 16 | 4;
        let payload_loc: u32 = (payload.len() as u32) << 16 | ext_len;
        let iov = |p: *const u8, len: usize| libc::iovec {
            iov_base: p as *mut _,
            iov_len: len,
        };
        let iovs = [
            iov(ptr::from_ref(&index).cast(), 4),
            iov(&VERSION, 1),
            iov(ptr::from_ref(&EVENT_ID).cast(), 2),
            iov(ptr::from_ref(&ext_loc).cast(), 4),
            iov(ptr::from_ref(&payload_loc).cast(), 4),
            iov(EXT_META.as_ptr(), EXT_META.len()),
            iov(EXT_ACTIVITY.as_ptr(), EXT_ACTIVITY.len()),
            iov(payload.as_ptr(), payload.len()),
        ];
        loop {
            // SAFETY: every iovec points at live memory of its length.
            let n = unsafe { libc::writev(data, iovs.as_ptr(), iovs.len() as i32) };
            if n >= 0 {
                return Ok(n);
            }
            match Error::last_os_error().raw_os_error().unwrap_or(0) {
                libc::EINTR => continue,
                errno => return Err(errno),
            }
        }
    }

    /// Serves the test's commands until it says `exit` or goes away.
    pub fn main(sock: RawFd) -> Result<(), String> {
        let (hello, data) = recv(sock)?;
        let data = data.ok_or_else(|| format!("no descriptor with {hello:?}"))?;
        let index = register(data.as_raw_fd())?;
        send(sock, &format!("registered {index}"), None)?;
        loop {
            let (cmd, _) = recv(sock)?;
            let reply = match cmd.as_str() {
                "word" => format!("word {:#x}", WORD.load(Ordering::Relaxed)),
                "write-now" => match write_event(data.as_raw_fd(), index) {
                    Ok(n) => format!("wrote {n}"),
                    Err(errno) => format!("errno {errno}"),
                },
                // As the runtime does: write only once its bit says a session listens.
                "write" => match wait_until("bit 31 set", 5000, bit_set) {
                    Ok(()) => match write_event(data.as_raw_fd(), index) {
                        Ok(n) => format!("wrote {n} word {:#x}", WORD.load(Ordering::Relaxed)),
                        Err(errno) => format!("errno {errno}"),
                    },
                    Err(e) => e,
                },
                "wait-clear" => match wait_until("bit 31 clear", 5000, || !bit_set()) {
                    Ok(()) => format!("word {:#x}", WORD.load(Ordering::Relaxed)),
                    Err(e) => e,
                },
                "unregister" => match unregister(data.as_raw_fd()) {
                    Ok(()) => format!("word {:#x}", WORD.load(Ordering::Relaxed)),
                    Err(e) => e,
                },
                "exit" => return Ok(()),
                other => format!("unknown command {other:?}"),
            };
            send(sock, &reply, None)?;
        }
    }
}

/// The tool's side: the writer child and the socket to it.
struct Writer {
    child: Child,
    sock: OwnedFd,
}

impl Writer {
    /// Starts the writer, opens `user_events_data`, passes it over the socket and closes this
    /// process's copy; returns once the writer has registered.
    fn start() -> Result<Self, String> {
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } < 0
        {
            return Err(os_err("socketpair"));
        }
        // SAFETY: both are new descriptors that nothing else owns.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // The writer's end is inherited (the harness runs one test at a time: no other
        // thread forks meanwhile).
        // SAFETY: fcntl on a descriptor this function owns.
        if unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) } < 0 {
            return Err(os_err("fcntl"));
        }
        // A writer that dies or hangs fails the test instead of blocking it: 20 s on the
        // reference machine, scaled to this run like the writer's own waits.
        let timeout = libc::timeval {
            tv_sec: (20.0 * slowness()) as libc::time_t,
            tv_usec: 0,
        };
        // SAFETY: SO_RCVTIMEO takes a timeval, given with its size.
        unsafe {
            libc::setsockopt(
                ours.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                ptr::from_ref(&timeout).cast(),
                mem::size_of::<libc::timeval>() as u32,
            )
        };
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .arg(WRITER_ARG)
            .arg(theirs.as_raw_fd().to_string())
            .spawn()
            .map_err(|e| format!("spawn the writer: {e}"))?;
        drop(theirs);
        let writer = Self { child, sock: ours };
        let data = OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("{TRACEFS}/user_events_data"))
            .map_err(|e| format!("open user_events_data: {e}"))?;
        send(
            writer.sock.as_raw_fd(),
            "user_events_data",
            Some(data.as_raw_fd()),
        )?;
        drop(data);
        let reply = writer.recv()?;
        ensure(reply.starts_with("registered "), format!("writer: {reply}"))?;
        Ok(writer)
    }

    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    fn recv(&self) -> Result<String, String> {
        recv(self.sock.as_raw_fd()).map(|(text, _)| text)
    }

    fn ask(&self, cmd: &str) -> Result<String, String> {
        send(self.sock.as_raw_fd(), cmd, None)?;
        self.recv()
    }

    fn expect(&self, cmd: &str, want: &str) -> Result<(), String> {
        let got = self.ask(cmd)?;
        ensure(
            got == want,
            format!("writer, {cmd}: {got:?}, want {want:?}"),
        )
    }

    /// Tells the writer to exit and checks it did so cleanly; the kernel then deletes the
    /// event, whose only references were the writer's.
    fn exit(mut self) -> Result<(), String> {
        send(self.sock.as_raw_fd(), "exit", None)?;
        let status = self.child.wait().map_err(|e| e.to_string())?;
        ensure(status.success(), format!("writer exited {status:?}"))?;
        wait_event_gone(NAME)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn word(bits: u32) -> String {
    format!("word {bits:#x}")
}

fn receiver_registers_bit31_with_the_passed_fd() -> Result<(), String> {
    let writer = Writer::start()?;
    ensure(event_exists(NAME), format!("no events/user_events/{NAME}"))?;
    let fields = Format::of(NAME)?.user_fields();
    // Upstream packs the fields: no alignment.
    let want = [
        ("version", 8, 1),
        ("event_id", 9, 2),
        ("extension", 11, 4),
        ("payload", 15, 4),
    ];
    ensure(
        fields.iter().map(|(n, o, s)| (n.as_str(), *o, *s)).eq(want),
        format!("user fields {fields:?}, want {want:?}"),
    )?;
    expect_status(NAME, Some(NAME))?;
    writer.expect("word", &word(OWN_BIT))?;
    writer.expect("write-now", &format!("errno {EBADF}"))?;
    writer.exit()
}

fn records_the_8_iovec_event(via: Via) -> Result<(), String> {
    let writer = Writer::start()?;
    let format = Format::of(NAME)?;
    let mut tracer = Tracer::attach(via, NAME, writer.pid())?;
    let payload = payload();
    let total = 4 + 1 + 2 + 4 + 4 + EXT_META.len() + EXT_ACTIVITY.len() + payload.len();
    writer.expect(
        "write",
        &format!("wrote {total} {}", word(1 << ENABLE_BIT | OWN_BIT)),
    )?;
    expect_status(
        NAME,
        Some(&format!("{NAME} # Used by {}", via.status_word())),
    )?;
    let record = tracer.one_record()?;
    let pid = format.uint(&record, "common_pid")?;
    ensure(
        pid == writer.pid() as u64,
        format!("common_pid {pid}, want the writer's {}", writer.pid()),
    )?;
    ensure(
        format.uint(&record, "version")? == VERSION.into(),
        "version",
    )?;
    ensure(
        format.uint(&record, "event_id")? == EVENT_ID.into(),
        "event_id",
    )?;
    let ext = format.bytes(&record, "extension")?;
    let want_ext = [&EXT_META[..], &EXT_ACTIVITY[..]].concat();
    ensure(
        ext == want_ext,
        format!("extension {ext:?}, want {want_ext:?}"),
    )?;
    let got = format.bytes(&record, "payload")?;
    ensure(got == payload, format!("payload {got:?}, want {payload:?}"))?;
    tracer.detach()?;
    writer.expect("wait-clear", &word(OWN_BIT))?;
    expect_status(NAME, Some(NAME))?;
    writer.exit()
}

fn unregister_clears_bit31_only() -> Result<(), String> {
    let writer = Writer::start()?;
    let tracer = Tracer::attach(Via::Ftrace, NAME, 0)?;
    let total = 4 + 1 + 2 + 4 + 4 + EXT_META.len() + EXT_ACTIVITY.len() + payload().len();
    writer.expect(
        "write",
        &format!("wrote {total} {}", word(1 << ENABLE_BIT | OWN_BIT)),
    )?;
    // Cleared at UNREG, with ftrace still attached; the program's own bit stays.
    writer.expect("unregister", &word(OWN_BIT))?;
    expect_status(NAME, Some(&format!("{NAME} # Used by ftrace")))?;
    tracer.detach()?;
    // The writer's descriptor still references the event.
    expect_status(NAME, Some(NAME))?;
    writer.exit()
}

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(WRITER_ARG) {
        let sock: RawFd = args.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
        // SAFETY: the test passed this inherited socket's number; nothing else owns it.
        let sock = unsafe { OwnedFd::from_raw_fd(sock) };
        let result = writer::main(sock.as_raw_fd());
        if let Err(e) = &result {
            let _ = send(sock.as_raw_fd(), &format!("writer: {e}"), None);
        }
        drop(sock);
        std::process::exit(if result.is_ok() { 0 } else { 1 });
    }
    run(&[
        Test {
            name: "receiver_registers_bit31_with_the_passed_fd",
            run: receiver_registers_bit31_with_the_passed_fd,
        },
        Test {
            name: "ftrace_records_the_8_iovec_event",
            run: || records_the_8_iovec_event(Via::Ftrace),
        },
        Test {
            name: "perf_records_the_8_iovec_event",
            run: || records_the_8_iovec_event(Via::Perf),
        },
        Test {
            name: "unregister_clears_bit31_only",
            run: unregister_clears_bit31_only,
        },
    ]);
}
