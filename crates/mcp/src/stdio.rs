//! The server's standard input and output, read and written without tying
//! up a runtime thread, and never waited for at exit.
//!
//! tokio's own stdin and stdout run every read and write on a thread of
//! its blocking pool, and the runtime waits for that pool when it shuts
//! down: a read of a socket or a terminal that never returns held the exit
//! for the runtime's whole grace period (a second). Here each stream is
//! taken by what it is:
//!
//! * a pipe is reopened through `/proc/self/fd` with `O_NONBLOCK`, on a
//!   file description of its own (the flag does not reach whoever shares
//!   the original, a parent shell or our own children), and driven by the
//!   reactor;
//! * a socket (some clients start servers on one end of a socket pair,
//!   used as both stdin and stdout) is driven by the reactor too, with
//!   `MSG_DONTWAIT` on every call, so its file status flags stay untouched;
//! * anything else (a terminal, a file, `/dev/null`) is read or written by
//!   a plain thread of its own, which nobody joins: the process exits
//!   without waiting for a read that may never return.

use std::fs::File;
use std::future::Future as _;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::fcntl::OFlag;
use nix::sys::socket::MsgFlags;
use nix::sys::stat::SFlag;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::sync::{mpsc, oneshot};

/// The input stream the transport reads.
pub(crate) type Input = Box<dyn AsyncRead + Send + Unpin>;
/// The output stream the transport writes.
pub(crate) type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// How much a reading thread hands over at once.
const CHUNK: usize = 64 * 1024;

/// What a standard stream is, as far as reading and writing it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pipe,
    Socket,
    Other,
}

fn kind_of(fd: BorrowedFd<'_>) -> Kind {
    let Ok(stat) = nix::sys::stat::fstat(fd) else {
        return Kind::Other;
    };
    let format = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if format == SFlag::S_IFIFO {
        Kind::Pipe
    } else if format == SFlag::S_IFSOCK {
        Kind::Socket
    } else {
        Kind::Other
    }
}

/// The process's standard input, as described in the module docs.
pub(crate) fn stdin() -> Input {
    let stdin = io::stdin();
    let fd = stdin.as_fd();
    match reactor_stream(fd, false) {
        Some(stream) => Box::new(stream),
        None => Box::new(ThreadReader::start(fd)),
    }
}

/// The process's standard output, as described in the module docs.
pub(crate) fn stdout() -> Output {
    let stdout = io::stdout();
    let fd = stdout.as_fd();
    match reactor_stream(fd, true) {
        Some(stream) => Box::new(stream),
        None => Box::new(ThreadWriter::start(fd)),
    }
}

/// `fd` driven by the reactor: a pipe reopened on a file description of
/// its own, a socket as it is; None for anything else (a terminal, a
/// file) or when that cannot be done, which then gets a thread.
fn reactor_stream(fd: BorrowedFd<'_>, write: bool) -> Option<FdStream> {
    match kind_of(fd) {
        Kind::Pipe => reopen(fd, write).and_then(|fd| FdStream::new(fd, false)),
        Kind::Socket => fd
            .try_clone_to_owned()
            .ok()
            .and_then(|fd| FdStream::new(fd, true)),
        Kind::Other => None,
    }
}

/// Opens the pipe behind `fd` again, non-blocking, on a file description
/// of its own; None when that cannot be done (no `/proc`, say), or what
/// was opened is not a pipe after all.
fn reopen(fd: BorrowedFd<'_>, write: bool) -> Option<OwnedFd> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).bits())
        .open(path)
        .ok()?;
    let fd = OwnedFd::from(file);
    (kind_of(fd.as_fd()) == Kind::Pipe).then_some(fd)
}

/// A pipe or socket driven by the reactor.
struct FdStream {
    fd: AsyncFd<OwnedFd>,
    /// Use `recv`/`send` with `MSG_DONTWAIT` (the descriptor itself may be
    /// blocking); otherwise the descriptor is non-blocking of its own.
    socket: bool,
}

impl FdStream {
    fn new(fd: OwnedFd, socket: bool) -> Option<Self> {
        // Registration fails for what epoll cannot watch. The constructor
        // is deprecated because a wrapped value may close or swap its
        // descriptor behind the reactor's back; an `OwnedFd` owned here
        // cannot, which is the whole contract of its `unsafe` successor
        // (and this crate forbids `unsafe`).
        #[allow(deprecated)]
        let fd = AsyncFd::with_interest(fd, Interest::READABLE | Interest::WRITABLE).ok()?;
        Some(FdStream { fd, socket })
    }
}

impl AsyncRead for FdStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let socket = this.socket;
        loop {
            let mut guard = ready!(this.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let result = guard.try_io(|fd| {
                let got = if socket {
                    nix::sys::socket::recv(
                        fd.get_ref().as_raw_fd(),
                        unfilled,
                        MsgFlags::MSG_DONTWAIT,
                    )
                } else {
                    nix::unistd::read(fd.get_ref(), unfilled)
                };
                got.map_err(io::Error::from)
            });
            match result {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                // Not ready after all: readiness was cleared, wait again.
                Err(_would_block) => {}
            }
        }
    }
}

impl AsyncWrite for FdStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let socket = this.socket;
        loop {
            let mut guard = ready!(this.fd.poll_write_ready(cx))?;
            let result = guard.try_io(|fd| {
                let sent = if socket {
                    // No SIGPIPE for a peer that went away: the error says it.
                    nix::sys::socket::send(
                        fd.get_ref().as_raw_fd(),
                        buf,
                        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
                    )
                } else {
                    nix::unistd::write(fd.get_ref(), buf)
                };
                sent.map_err(io::Error::from)
            });
            match result {
                Ok(Ok(n)) => return Poll::Ready(Ok(n)),
                Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Reads a stream that cannot be watched on a thread of its own. The
/// thread is never joined; a few chunks at most wait in between.
struct ThreadReader {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
}

impl ThreadReader {
    fn start(fd: BorrowedFd<'_>) -> Self {
        let (send, chunks) = mpsc::channel(4);
        match fd.try_clone_to_owned() {
            Ok(fd) => {
                let mut file = File::from(fd);
                let spawned = std::thread::Builder::new()
                    .name("stdin-reader".into())
                    .spawn(move || {
                        loop {
                            let mut chunk = vec![0; CHUNK];
                            let got = match file.read(&mut chunk) {
                                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                                Ok(n) => {
                                    chunk.truncate(n);
                                    Ok(chunk)
                                }
                                Err(err) => Err(err),
                            };
                            let last = !matches!(&got, Ok(chunk) if !chunk.is_empty());
                            if send.blocking_send(got).is_err() || last {
                                return;
                            }
                        }
                    });
                if let Err(err) = spawned {
                    tracing::error!(error = %err, "no thread to read stdin");
                }
            }
            Err(err) => tracing::error!(error = %err, "stdin cannot be read"),
        }
        // Without a thread the sender is gone: the input reads as ended.
        ThreadReader {
            chunks,
            current: Vec::new(),
            at: 0,
        }
    }
}

impl AsyncRead for ThreadReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at == this.current.len() {
            match ready!(this.chunks.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    this.current = chunk;
                    this.at = 0;
                }
                Some(Err(err)) => return Poll::Ready(Err(err)),
                // The end: nothing more is put in `buf`.
                None => return Poll::Ready(Ok(())),
            }
        }
        let n = buf.remaining().min(this.current.len() - this.at);
        buf.put_slice(&this.current[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// One write handed to the writing thread, and where it says how it went.
type WriteJob = (Vec<u8>, oneshot::Sender<io::Result<()>>);

/// Writes a stream that cannot be watched on a thread of its own, one
/// write at a time. The thread is never joined.
struct ThreadWriter {
    jobs: mpsc::Sender<WriteJob>,
    in_flight: Option<oneshot::Receiver<io::Result<()>>>,
}

impl ThreadWriter {
    fn start(fd: BorrowedFd<'_>) -> Self {
        let (jobs, mut queue) = mpsc::channel::<WriteJob>(1);
        match fd.try_clone_to_owned() {
            Ok(fd) => {
                let mut file = File::from(fd);
                let spawned = std::thread::Builder::new()
                    .name("stdout-writer".into())
                    .spawn(move || {
                        while let Some((bytes, done)) = queue.blocking_recv() {
                            let _ = done.send(file.write_all(&bytes).and_then(|()| file.flush()));
                        }
                    });
                if let Err(err) = spawned {
                    tracing::error!(error = %err, "no thread to write stdout");
                }
            }
            Err(err) => tracing::error!(error = %err, "stdout cannot be written"),
        }
        ThreadWriter {
            jobs,
            in_flight: None,
        }
    }

    /// Waits for the write in flight, if any.
    fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(in_flight) = self.in_flight.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let result = ready!(Pin::new(in_flight).poll(cx));
        self.in_flight = None;
        Poll::Ready(result.unwrap_or_else(|_| Err(broken())))
    }
}

fn broken() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the stdout writer has stopped")
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_done(cx))?;
        let (done, result) = oneshot::channel();
        // The channel holds one job and none is in flight: there is room.
        if this.jobs.try_send((buf.to_vec(), done)).is_err() {
            return Poll::Ready(Err(broken()));
        }
        this.in_flight = Some(result);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_done(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_done(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_socket_is_read_and_written_without_changing_its_flags() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let fd = OwnedFd::from(ours);
        assert_eq!(kind_of(fd.as_fd()), Kind::Socket);
        runtime().block_on(async {
            let mut stream = FdStream::new(fd.try_clone().unwrap(), true).unwrap();
            theirs.write_all(b"hello\n").unwrap();
            let mut got = [0; 16];
            let n = stream.read(&mut got).await.unwrap();
            assert_eq!(&got[..n], b"hello\n");
            stream.write_all(b"back\n").await.unwrap();
            let mut back = [0; 5];
            theirs.read_exact(&mut back).unwrap();
            assert_eq!(&back, b"back\n");
            drop(theirs);
            assert_eq!(stream.read(&mut got).await.unwrap(), 0, "the end");
        });
        let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert!(!OFlag::from_bits_truncate(flags).contains(OFlag::O_NONBLOCK));
    }

    #[test]
    fn a_thread_reads_and_writes_what_cannot_be_watched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input");
        std::fs::write(&path, b"one\ntwo\n").unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(kind_of(file.as_fd()), Kind::Other);
        let out = File::create(dir.path().join("output")).unwrap();
        runtime().block_on(async {
            let mut reader = ThreadReader::start(file.as_fd());
            let mut all = Vec::new();
            reader.read_to_end(&mut all).await.unwrap();
            assert_eq!(all, b"one\ntwo\n");
            let mut writer = ThreadWriter::start(out.as_fd());
            writer.write_all(b"abc").await.unwrap();
            writer.write_all(b"def").await.unwrap();
            writer.flush().await.unwrap();
        });
        assert_eq!(std::fs::read(dir.path().join("output")).unwrap(), b"abcdef");
    }
}
